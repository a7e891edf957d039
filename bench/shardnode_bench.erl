%% The benchmark controller and load generator behind `make bench'.
%%
%% It runs on a distributed BEAM node (bench<tag>@127.0.0.1, cookie
%% shardnode_bench) and drives two systems doing the same job:
%%
%%   shardnode  a C node started with shardnode:start_node/1, entity types
%%              counter and echo;
%%   beam       a BEAM node started with peer, running bench_region (one
%%              gen_server per type, registered as the type) and one
%%              bench_entity gen_server per entity.
%%
%% It talks to both with `!' and gen_server:call/3 only, from its own client
%% processes and, for the rows marked "load nodes", from the same clients
%% spread over a few BEAM load nodes (one distribution connection carries
%% only so much, see bench/README.md); for the "C load generator" rows it runs build/bench/c_loadgen (bench/c_loadgen.c), a C
%% node that speaks the distribution protocol itself, against the same
%% node, so that the client is not the bottleneck. Rounds alternate
%% shardnode, beam, shardnode, beam, ...; every figure is the median over
%% rounds of the per-round value. The rebalance figure (a second node joins
%% a node hosting 100 shards) has no BEAM baseline and is measured on
%% shardnode only. Every node started is stopped again, also when a
%% measurement fails, and is checked to be gone.
%%
%% Settings come from the environment (see bench/README.md): BENCH_ROUNDS,
%% BENCH_ENTITIES, BENCH_SECONDS, BENCH_CLIENTS, BENCH_CLIENT_NODES,
%% BENCH_WINDOW, BENCH_C_WINDOW,
%% BENCH_C_LOADGEN, BENCH_TAG, BENCH_PIDS_FILE, BENCH_DATA_DIR.
-module(shardnode_bench).

-export([main/0]).

-define(CALL_TIMEOUT, 15000).
%% entities touched by the tell and ask figures
-define(HOT_ENTITIES, 10000).
%% echo payload
-define(ECHO_BYTES, 100).
%% shards of the node that measures the first message to a new shard
-define(FIRST_NUM_SHARDS, 1000).
-define(FIRST_SAMPLES, 50).
%% the rebalance figure: shards of the two nodes, and their settings
-define(REBALANCE_SHARDS, 100).
-define(REBALANCE_CONFIG, #{number_of_shards => ?REBALANCE_SHARDS,
                            rebalance_interval_ms => 100,
                            max_simultaneous_rebalance => 100,
                            rebalance_threshold => 1}).
%% how often the rebalance figure asks the first node, and for how long
-define(REBALANCE_POLL_MS, 2).
-define(REBALANCE_DEADLINE_MS, 30000).

%%====================================================================
%% Entry point
%%====================================================================

-spec main() -> no_return().
main() ->
    Status =
        try run(config()) of
            ok -> 0
        catch
            Class:Reason:Stack ->
                io:format(standard_error, "~nmake bench: failed: ~p:~p~n~p~n",
                          [Class, Reason, Stack]),
                1
        after
            cleanup()
        end,
    erlang:halt(Status).

config() ->
    #{rounds => env_int("BENCH_ROUNDS", 3, 1),
      entities => env_int("BENCH_ENTITIES", 1000000, 1000),
      seconds => env_int("BENCH_SECONDS", 2, 1),
      clients => env_int("BENCH_CLIENTS", 16, 1),
      %% one letter per load node names it (bench_loada<tag>, ...)
      client_nodes => env_int("BENCH_CLIENT_NODES", 4, 1, 26),
      window => env_int("BENCH_WINDOW", 100, 1),
      c_window => env_int("BENCH_C_WINDOW", 10, 1),
      c_loadgen => filename:absname(env_str("BENCH_C_LOADGEN", "build/bench/c_loadgen")),
      tag => env_str("BENCH_TAG", os:getpid()),
      pids_file => env_str("BENCH_PIDS_FILE", ""),
      data_dir => env_str("BENCH_DATA_DIR", "build/bench/data")}.

env_int(Var, Default, Min) ->
    env_int(Var, Default, Min, infinity).

%% Integers compare below the atom infinity, so it stands for no maximum.
env_int(Var, Default, Min, Max) ->
    case os:getenv(Var) of
        false -> Default;
        "" -> Default;
        S ->
            case string:to_integer(string:trim(S)) of
                {N, ""} when N >= Min, N =< Max -> N;
                _ -> erlang:error({bad_env, Var, S, {expected_integer_in, Min, Max}})
            end
    end.

env_str(Var, Default) ->
    case os:getenv(Var) of
        false -> Default;
        "" -> Default;
        S -> S
    end.

%%====================================================================
%% The run
%%====================================================================

run(#{rounds := Rounds} = Cfg0) ->
    node() =/= nonode@nohost orelse erlang:error(not_distributed),
    Cfg = Cfg0#{load_start => loadavg()},
    {ok, _} = application:ensure_all_started(shardnode),
    print_header(Cfg),
    T0 = erlang:monotonic_time(millisecond),
    PerRound = with_load_nodes(
                 Cfg0,
                 fun(LoadNodes) ->
                         [begin
                              S = measure(shardnode, R, Cfg#{load_nodes => LoadNodes}),
                              B = measure(beam, R, Cfg#{load_nodes => LoadNodes}),
                              {S, B}
                          end || R <- lists:seq(1, Rounds)]
                 end),
    Secs = (erlang:monotonic_time(millisecond) - T0) / 1000,
    {Ss, Bs} = lists:unzip(PerRound),
    io:format("~nMedians over ~b rounds (~.1f s in all). Ratios read so that "
              ">1 means shardnode is better:~nthroughput rows are shardnode/BEAM, "
              "cost rows (time, bytes) are BEAM/shardnode.~n~n",
              [Rounds, Secs]),
    print_table(medians(Ss), medians(Bs), Cfg),
    all_gone(),
    io:format("~nload average (1, 5, 15 min) at the start: ~s, at the end: ~s~n",
              [maps:get(load_start, Cfg), loadavg()]),
    ok.

%% Everything else running on the machine shares its cores with the three
%% nodes measured here; the load average says how much there was.
loadavg() ->
    case file:read_file("/proc/loadavg") of
        {ok, Bin} -> lists:join(" ", lists:sublist(string:lexemes(binary_to_list(Bin), " "), 3));
        _ -> "unknown"
    end.

%% One system, one round: every figure, each on a fresh node where it
%% matters.
measure(System, Round, Cfg) ->
    io:format("~nround ~b, ~s~n", [Round, label(System)]),
    M1 = with_node(System, #{}, Cfg,
                   fun(Sys) -> throughput_figures(Sys, Cfg) end),
    M2 = with_node(System, #{number_of_shards => ?FIRST_NUM_SHARDS}, Cfg,
                   fun(Sys) -> first_message_figures(Sys, Cfg) end),
    M3 = with_node(System, #{}, Cfg,
                   fun(Sys) -> memory_figures(Sys, Cfg) end),
    M4 = case System of
             shardnode -> rebalance_figures(Cfg);
             beam -> #{}
         end,
    maps:merge(M1, maps:merge(M2, maps:merge(M3, M4))).

label(shardnode) -> "shardnode";
label(beam) -> "BEAM".

%%====================================================================
%% Figures
%%====================================================================

throughput_figures(#{ospid := OsPid} = Sys, #{clients := C, window := W, seconds := Secs} = Cfg) ->
    %% every hot entity exists before anything is timed
    fill(Sys, counter, incr, 1, ?HOT_ENTITIES, C, W),
    Payload = binary:copy(<<"x">>, ?ECHO_BYTES),
    fill(Sys, echo, Payload, 1, ?HOT_ENTITIES, C, W),
    Me = list_to_integer(os:getpid()),
    Cpu0 = cpu_us(OsPid), Gen0 = cpu_us(Me),
    {Tell, Tells} = tell_rate(Sys, counter, incr, ?HOT_ENTITIES, C, W, Secs),
    Cpu1 = cpu_us(OsPid), Gen1 = cpu_us(Me),
    {AskRate, AskP50, AskP99, Asks} = ask(Sys, counter, get, ?HOT_ENTITIES, C, Secs),
    Cpu2 = cpu_us(OsPid), Gen2 = cpu_us(Me),
    {EchoRate, EchoP50, EchoP99, _} = ask(Sys, echo, Payload, ?HOT_ENTITIES, C, Secs),
    TellCpu = (Cpu1 - Cpu0) / Tells,
    AskCpu = (Cpu2 - Cpu1) / Asks,
    progress("tell", "~s msg/s, ~s us CPU per message (load generator: ~s us)",
             [fmt(Tell), fmt(TellCpu), fmt((Gen1 - Gen0) / Tells)]),
    progress("ask counter", "~s calls/s, p50 ~s us, p99 ~s us, ~s us CPU per call (load generator: ~s us)",
             [fmt(AskRate), fmt(AskP50), fmt(AskP99), fmt(AskCpu), fmt((Gen2 - Gen1) / Asks)]),
    progress("ask echo", "~s calls/s, p50 ~s us, p99 ~s us",
             [fmt(EchoRate), fmt(EchoP50), fmt(EchoP99)]),
    Spread = spread_figures(Sys, Cfg),
    CFigures = maps:merge(Spread, c_loadgen_figures(Sys, Cfg)),
    CFigures#{tell_rate => Tell, tell_cpu => TellCpu,
              ask_rate => AskRate, ask_p50 => AskP50, ask_p99 => AskP99, ask_cpu => AskCpu,
              echo_rate => EchoRate, echo_p50 => EchoP50, echo_p99 => EchoP99}.

%% The tell and ask counter figures again, with the same clients spread
%% over the load nodes (client I on node I rem N), so that each node's one
%% distribution connection carries a share of the load instead of all of
%% it. The load nodes' CPU is the sum over their OS processes.
spread_figures(#{ospid := OsPid} = Sys,
               #{clients := C, window := W, seconds := Secs, load_nodes := Loads}) ->
    Nodes = [N || #{node := N} <- Loads],
    LoadCpu = fun() -> lists:sum([cpu_us(P) || #{ospid := P} <- Loads]) end,
    Cpu0 = cpu_us(OsPid), Gen0 = LoadCpu(),
    {Tell, Tells} = tell_rate(Sys, counter, incr, ?HOT_ENTITIES, C, W, Secs, Nodes),
    Cpu1 = cpu_us(OsPid), Gen1 = LoadCpu(),
    {AskRate, AskP50, AskP99, Asks} = ask(Sys, counter, get, ?HOT_ENTITIES, C, Secs, Nodes),
    Cpu2 = cpu_us(OsPid), Gen2 = LoadCpu(),
    TellCpu = (Cpu1 - Cpu0) / Tells,
    AskCpu = (Cpu2 - Cpu1) / Asks,
    What = io_lib:format("~b nodes", [length(Nodes)]),
    progress(["tell, ", What], "~s msg/s, ~s us CPU per message (load nodes: ~s us)",
             [fmt(Tell), fmt(TellCpu), fmt((Gen1 - Gen0) / Tells)]),
    progress(["ask, ", What], "~s calls/s, p50 ~s us, p99 ~s us, ~s us CPU per call (load nodes: ~s us)",
             [fmt(AskRate), fmt(AskP50), fmt(AskP99), fmt(AskCpu), fmt((Gen2 - Gen1) / Asks)]),
    #{spread_tell_rate => Tell, spread_tell_cpu => TellCpu,
      spread_ask_rate => AskRate, spread_ask_p50 => AskP50, spread_ask_p99 => AskP99,
      spread_ask_cpu => AskCpu}.

%% The same counters driven by the C load generator: K clients each keeping
%% BENCH_C_WINDOW calls in flight (asks, incr), then BENCH_WINDOW tells
%% unanswered (tells, incr). It sends no monitors (see bench/c_loadgen.c), so
%% its asks measure the message path of a call without the two monitor
%% control messages that a BEAM gen_server:call adds.
c_loadgen_figures(#{ospid := OsPid} = Sys, #{c_window := CW, window := W} = Cfg) ->
    Cpu0 = cpu_us(OsPid),
    Ask = c_loadgen(Sys, ask, CW, Cfg),
    Cpu1 = cpu_us(OsPid),
    Tell = c_loadgen(Sys, tell, W, Cfg),
    Cpu2 = cpu_us(OsPid),
    #{"calls" := Calls, "calls_per_s" := AskRate, "p50_us" := P50, "p99_us" := P99} = Ask,
    #{"tells" := Tells, "tells_per_s" := TellRate} = Tell,
    AskCpu = (Cpu1 - Cpu0) / Calls,
    TellCpu = (Cpu2 - Cpu1) / Tells,
    progress("C gen ask", "~s calls/s, p50 ~s us, p99 ~s us, ~s us CPU per call "
             "(the generator used ~s% of a core)",
             [fmt(AskRate), fmt(P50), fmt(P99), fmt(AskCpu), fmt(maps:get("loadgen_cpu_pct", Ask))]),
    progress("C gen tell", "~s msg/s, ~s us CPU per message (the generator used ~s% of a core)",
             [fmt(TellRate), fmt(TellCpu), fmt(maps:get("loadgen_cpu_pct", Tell))]),
    #{c_ask_rate => AskRate, c_ask_p50 => P50, c_ask_p99 => P99, c_ask_cpu => AskCpu,
      c_tell_rate => TellRate, c_tell_cpu => TellCpu}.

%% Runs the C load generator once against the system's node and returns its
%% result line as a map of numbers. The BEAM baseline's region needs the
%% reply-to pid inside a tell.
c_loadgen(#{system := System, node := Node}, Mode, Window,
          #{c_loadgen := Exe, clients := C, seconds := Secs} = Cfg) ->
    filelib:is_regular(Exe) orelse erlang:error({c_loadgen_missing, Exe}),
    Args = ["--target", atom_to_list(Node), "--cookie", atom_to_list(erlang:get_cookie()),
            "--mode", atom_to_list(Mode), "--seconds", integer_to_list(Secs),
            "--clients", integer_to_list(C), "--window", integer_to_list(Window),
            "--entities", integer_to_list(?HOT_ENTITIES)]
        ++ case {System, Mode} of
               {beam, tell} -> ["--reply-to-in-msg"];
               _ -> []
           end,
    %% its stderr is ours: its complaints reach the terminal as they are
    Port = open_port({spawn_executable, Exe}, [{args, Args}, {line, 4096}, exit_status, use_stdio]),
    {os_pid, OsPid} = erlang:port_info(Port, os_pid),
    note_ospid(OsPid, Cfg),
    %% it gives up by itself 20 s (connecting) or 15 s (draining) late
    Lines = c_loadgen_output(Port, OsPid, [], (Secs + 60) * 1000),
    case [L || "mode=" ++ _ = L <- Lines] of
        [Line] -> parse_kv(Line);
        _ -> erlang:error({c_loadgen_output, Lines})
    end.

c_loadgen_output(Port, OsPid, Acc, Timeout) ->
    receive
        {Port, {data, {eol, Line}}} -> c_loadgen_output(Port, OsPid, [Line | Acc], Timeout);
        {Port, {data, {noeol, Line}}} -> c_loadgen_output(Port, OsPid, [Line | Acc], Timeout);
        {Port, {exit_status, 0}} -> lists:reverse(Acc);
        {Port, {exit_status, Status}} -> erlang:error({c_loadgen_failed, Status, lists:reverse(Acc)})
    after Timeout ->
            _ = os:cmd("kill -KILL " ++ integer_to_list(OsPid)),
            catch port_close(Port),
            erlang:error({c_loadgen_timeout, lists:reverse(Acc)})
    end.

%% "k1=v1 k2=v2 ..." with numeric values, as c_loadgen prints its result.
parse_kv(Line) ->
    maps:from_list([begin
                        [K, V] = string:split(Pair, "="),
                        {K, to_number(V)}
                    end || Pair <- string:lexemes(Line, " ")]).

to_number("ask") -> ask;
to_number("tell") -> tell;
to_number(V) ->
    case string:to_integer(V) of
        {N, ""} -> N;
        _ -> list_to_float(V)
    end.

%% On a fresh node with many shards: the first call to an entity whose shard
%% no region hosts yet (shardnode asks its coordinator where the shard
%% lives, then starts it), and the first call to a new entity in a shard
%% already hosted. The BEAM baseline has no shards: both of its figures are
%% the first call to a new entity.
first_message_figures(Sys, _Cfg) ->
    N = ?FIRST_NUM_SHARDS,
    %% the region's first message of all (its registration with the
    %% coordinator) is not timed
    Warm = 0,
    _ = ask_one(Sys, counter, Warm, get),
    NewShardIds = pick_ids(1, ?FIRST_SAMPLES, N,
                                fun(Shard, Used) -> not maps:is_key(Shard, Used) end,
                                #{erlang:phash2(Warm, N) => true}),
    NewShard = [timed_call(Sys, counter, Id, get) || Id <- NewShardIds],
    Hosted = maps:from_list([{erlang:phash2(Id, N), true} || Id <- [Warm | NewShardIds]]),
    HostedIds = pick_ids(lists:max(NewShardIds) + 1, ?FIRST_SAMPLES, N,
                              fun(Shard, _) -> maps:is_key(Shard, Hosted) end, #{}),
    NewEntity = [timed_call(Sys, counter, Id, get) || Id <- HostedIds],
    First = median(NewShard),
    Second = median(NewEntity),
    progress("first message", "new ~s ~s us, new entity in hosted shard ~s us (medians of ~b)",
             [case maps:get(system, Sys) of shardnode -> "shard"; beam -> "entity" end,
              fmt(First), fmt(Second), ?FIRST_SAMPLES]),
    #{first_new_shard => First, first_hosted_shard => Second}.

%% Integer ids from From on: Count of them, each in a shard that Accept/2
%% takes, no two in the same shard when Accept looks at Used.
pick_ids(From, Count, N, Accept, Used) ->
    pick_ids(From, Count, N, Accept, Used, []).

pick_ids(_Next, 0, _N, _Accept, _Used, Acc) ->
    lists:reverse(Acc);
pick_ids(Id, Count, N, Accept, Used, Acc) ->
    Shard = erlang:phash2(Id, N),
    case Accept(Shard, Used) of
        true -> pick_ids(Id + 1, Count - 1, N, Accept, Used#{Shard => true}, [Id | Acc]);
        false -> pick_ids(Id + 1, Count, N, Accept, Used, Acc)
    end.

timed_call(Sys, Type, Id, Msg) ->
    T0 = erlang:monotonic_time(),
    _ = ask_one(Sys, Type, Id, Msg),
    us(erlang:monotonic_time() - T0).

%% RSS growth of the node's OS process while it goes from no entities to
%% Entities idle counters (each created by one tell, then left alone).
memory_figures(#{ospid := OsPid} = Sys, #{entities := N, clients := C, window := W}) ->
    timer:sleep(200),
    Rss0 = rss_kb(OsPid),
    Elapsed = fill(Sys, counter, incr, 1, N, C, W),
    N = entity_count(Sys, counter),
    timer:sleep(500),
    Rss1 = rss_kb(OsPid),
    PerEntity = (Rss1 - Rss0) * 1024 / N,
    Rate = N / Elapsed,
    progress("memory", "~s bytes per idle entity (RSS ~s -> ~s MiB), created at ~s entities/s",
             [fmt(PerEntity), fmt(Rss0 / 1024), fmt(Rss1 / 1024), fmt(Rate)]),
    #{mem_per_entity => PerEntity, create_rate => Rate}.

entity_count(#{system := shardnode, node := Node}, Type) ->
    {ok, #{entities := Count}} = gen_server:call({Type, Node}, get_region_stats, ?CALL_TIMEOUT),
    Count;
entity_count(#{system := beam, node := Node}, Type) ->
    erpc:call(Node, bench_region, entity_count, [Type], ?CALL_TIMEOUT).

%% Two shardnode nodes, no baseline: the first, alone, hosts all 100 shards
%% of counter (one entity in each); a second joins it, and the coordinator
%% on the first moves shards until each node has 50. The time is taken
%% from the second node being `up' in the first node's member list (and
%% from the start of its OS process) to the first get_cluster_sharding_stats
%% on the first node that shows 50 shards on each. A process polls the
%% first node every REBALANCE_POLL_MS from before the second node is
%% started, so both moments are seen as they happen, not after
%% shardnode:start_node/1 returns.
rebalance_figures(#{tag := Tag} = Cfg) ->
    N = ?REBALANCE_SHARDS,
    Opts = #{types => [counter], config => ?REBALANCE_CONFIG},
    with_c_node("bench_c", Opts, Cfg,
                fun(#{node := A} = SysA) ->
                        Ids = pick_ids(1, N, N, fun(Shard, Used) -> not maps:is_key(Shard, Used) end,
                                       #{}),
                        [1 = ask_one(SysA, counter, Id, incr) || Id <- Ids],
                        {ok, #{A := Before} = Stats0} =
                            gen_server:call({counter, A}, get_cluster_sharding_stats, ?CALL_TIMEOUT),
                        {1, N} =:= {map_size(Stats0), map_size(Before)}
                            orelse erlang:error({not_all_shards_on_first_node, Stats0}),
                        B = list_to_atom("bench_cb" ++ Tag ++ "@127.0.0.1"),
                        Poller = start_rebalance_poller(A, B, N div 2),
                        try
                            with_c_node("bench_cb", Opts#{join => [A]}, Cfg,
                                        fun(#{started_at := T0}) ->
                                                rebalance_result(Poller, T0)
                                        end)
                        after
                            stop_poller(Poller)
                        end
                end).

start_rebalance_poller(A, B, Half) ->
    Self = self(),
    Ref = make_ref(),
    Up = fun() ->
                 case catch gen_server:call({shardnode, A}, members, ?CALL_TIMEOUT) of
                     {ok, Ms} -> lists:any(fun(#{node := M, status := S}) -> {M, S} =:= {B, up} end, Ms);
                     _ -> false
                 end
         end,
    Balanced = fun() ->
                       case catch gen_server:call({counter, A}, get_cluster_sharding_stats, ?CALL_TIMEOUT) of
                           {ok, #{A := OnA, B := OnB} = Stats} when map_size(Stats) =:= 2 ->
                               {map_size(OnA), map_size(OnB)} =:= {Half, Half};
                           _ -> false
                       end
               end,
    Deadline = erlang:monotonic_time(millisecond) + ?REBALANCE_DEADLINE_MS,
    {Pid, Mon} = spawn_monitor(fun() ->
                                       Result = try
                                                    TUp = poll_until(Up, Deadline, {B, not_up}),
                                                    TDone = poll_until(Balanced, Deadline,
                                                                       {not_balanced, A, B}),
                                                    {ok, TUp, TDone}
                                                catch
                                                    error:Reason -> {error, Reason}
                                                end,
                                       Self ! {Ref, Result}
                               end),
    {Pid, Mon, Ref}.

%% The time of the first call to Fun that returns true; polls every
%% REBALANCE_POLL_MS until Deadline (milliseconds), then fails.
poll_until(Fun, Deadline, What) ->
    case Fun() of
        true ->
            erlang:monotonic_time();
        false ->
            case erlang:monotonic_time(millisecond) >= Deadline of
                true -> erlang:error({rebalance_timeout, What});
                false -> timer:sleep(?REBALANCE_POLL_MS), poll_until(Fun, Deadline, What)
            end
    end.

rebalance_result({_Pid, Mon, Ref}, T0) ->
    receive
        {Ref, {ok, TUp, TDone}} ->
            FromUp = us(TDone - TUp) / 1000,
            FromStart = us(TDone - T0) / 1000,
            progress("rebalance", "50 + 50 shards ~s ms after the second node was up, "
                     "~s ms after it was started (up after ~s ms)",
                     [fmt(FromUp), fmt(FromStart), fmt(us(TUp - T0) / 1000)]),
            #{rebalance_from_up => FromUp, rebalance_from_start => FromStart};
        {Ref, {error, Reason}} ->
            erlang:error(Reason);
        {'DOWN', Mon, process, _, Reason} ->
            erlang:error({rebalance_poller_died, Reason})
    after ?REBALANCE_DEADLINE_MS + 5000 ->
            erlang:error(rebalance_poller_silent)
    end.

stop_poller({Pid, Mon, Ref}) ->
    exit(Pid, kill),
    erlang:demonitor(Mon, [flush]),
    receive {Ref, _} -> ok after 0 -> ok end.

%% CPU time (user + system) the OS process has used so far, in microseconds.
cpu_us(OsPid) ->
    {ok, Bin} = file:read_file("/proc/" ++ integer_to_list(OsPid) ++ "/stat"),
    %% the fields after the command name, which is in parentheses
    [_, After] = string:split(Bin, <<")">>, trailing),
    Fields = string:lexemes(After, " "),
    %% utime and stime are fields 14 and 15 of the line, 12 and 13 here
    Ticks = binary_to_integer(lists:nth(12, Fields)) + binary_to_integer(lists:nth(13, Fields)),
    Ticks * 1.0e6 / clock_ticks().

clock_ticks() ->
    case persistent_term:get({?MODULE, clk_tck}, undefined) of
        undefined ->
            Hz = list_to_integer(string:trim(os:cmd("getconf CLK_TCK"))),
            persistent_term:put({?MODULE, clk_tck}, Hz),
            Hz;
        Hz ->
            Hz
    end.

rss_kb(OsPid) ->
    {ok, Bin} = file:read_file("/proc/" ++ integer_to_list(OsPid) ++ "/status"),
    [Line] = [L || <<"VmRSS:", L/binary>> <- binary:split(Bin, <<"\n">>, [global])],
    [Kb, <<"kB">>] = binary:split(string:trim(Line), <<" ">>, [global, trim_all]),
    binary_to_integer(Kb).

%%====================================================================
%% Load: tells
%%====================================================================

tell(#{system := shardnode, node := Node}, Type, Id, Msg) ->
    {Type, Node} ! {Id, Msg};
tell(#{system := beam, node := Node}, Type, Id, Msg) ->
    {Type, Node} ! {Id, Msg, self()}.

ask_one(#{node := Node}, Type, Id, Msg) ->
    gen_server:call({Type, Node}, {Id, Msg}, ?CALL_TIMEOUT).

%% Tells Msg once to each of the ids From..From+Count-1, the ids split
%% into one contiguous range per client, each client keeping at most Window
%% tells unanswered; returns once every reply is in, with the seconds it
%% took.
fill(Sys, Type, Msg, From, Count, Clients, Window) ->
    Per = Count div Clients,
    Ranges = [{From + I * Per,
               case I of
                   _ when I =:= Clients - 1 -> Count - I * Per;
                   _ -> Per
               end} || I <- lists:seq(0, Clients - 1)],
    Start = erlang:monotonic_time(),
    Results = run_clients([fun() -> fill_client(Sys, Type, Msg, First, N, Window) end
                           || {First, N} <- Ranges, N > 0]),
    Count = lists:sum(Results),
    us(erlang:monotonic_time() - Start) / 1.0e6.

fill_client(Sys, Type, Msg, First, N, Window) ->
    Last = First + N - 1,
    Initial = min(Window, N),
    [tell(Sys, Type, Id, Msg) || Id <- lists:seq(First, First + Initial - 1)],
    fill_loop(Sys, Type, Msg, First + Initial, Last, Initial, 0).

fill_loop(_Sys, _Type, _Msg, _Next, _Last, 0, Got) ->
    Got;
fill_loop(Sys, Type, Msg, Next, Last, Out, Got) ->
    receive
        {Type, _Id, Reply} ->
            check_reply(Type, Reply),
            case Next =< Last of
                true ->
                    tell(Sys, Type, Next, Msg),
                    fill_loop(Sys, Type, Msg, Next + 1, Last, Out, Got + 1);
                false ->
                    fill_loop(Sys, Type, Msg, Next, Last, Out - 1, Got + 1)
            end
    after ?CALL_TIMEOUT ->
            erlang:error({tell_replies_missing, Out})
    end.

check_reply(counter, N) when is_integer(N) -> ok;
check_reply(echo, B) when is_binary(B) -> ok;
check_reply(_Type, Other) -> erlang:error({bad_reply, Other}).

%% Clients tell Msg to the hot entities (each client starting at its own
%% offset and cycling through all of them), each keeping Window tells
%% unanswered, for Secs seconds; then they stop sending and wait for the
%% replies still due. Messages per second = replies / time to the last one.
tell_rate(Sys, Type, Msg, NEnt, Clients, Window, Secs) ->
    tell_rate(Sys, Type, Msg, NEnt, Clients, Window, Secs, [node()]).

%% The same with the clients spread over Nodes. erlang:monotonic_time/0 is
%% the same clock on every node of one machine, so the deadline and the
%% clients' end times are comparable with Start.
tell_rate(Sys, Type, Msg, NEnt, Clients, Window, Secs, Nodes) ->
    Start = erlang:monotonic_time(),
    Deadline = Start + erlang:convert_time_unit(Secs, second, native),
    Results = run_clients([fun() ->
                                   Offset = I * NEnt div Clients,
                                   tell_client(Sys, Type, Msg, NEnt, Offset, Window, Deadline)
                           end || I <- lists:seq(0, Clients - 1)], Nodes),
    {Counts, Ends} = lists:unzip(Results),
    Total = lists:sum(Counts),
    {Total / (us(lists:max(Ends) - Start) / 1.0e6), Total}.

tell_client(Sys, Type, Msg, NEnt, Offset, Window, Deadline) ->
    [tell(Sys, Type, (Offset + K) rem NEnt + 1, Msg) || K <- lists:seq(0, Window - 1)],
    tell_loop(Sys, Type, Msg, NEnt, Offset + Window, Window, Deadline, 0).

tell_loop(_Sys, _Type, _Msg, _NEnt, _K, 0, _Deadline, Got) ->
    {Got, erlang:monotonic_time()};
tell_loop(Sys, Type, Msg, NEnt, K, Out, Deadline, Got) ->
    receive
        {Type, _Id, Reply} ->
            check_reply(Type, Reply),
            case erlang:monotonic_time() < Deadline of
                true ->
                    tell(Sys, Type, K rem NEnt + 1, Msg),
                    tell_loop(Sys, Type, Msg, NEnt, K + 1, Out, Deadline, Got + 1);
                false ->
                    tell_loop(Sys, Type, Msg, NEnt, K, Out - 1, Deadline, Got + 1)
            end
    after ?CALL_TIMEOUT ->
            erlang:error({tell_replies_missing, Out})
    end.

%%====================================================================
%% Load: asks
%%====================================================================

%% Clients call Msg on the hot entities, one call at a time each, for Secs
%% seconds. Returns calls per second, the p50 and p99 latency in
%% microseconds over every call of every client, and the number of calls.
ask(Sys, Type, Msg, NEnt, Clients, Secs) ->
    ask(Sys, Type, Msg, NEnt, Clients, Secs, [node()]).

%% The same with the clients spread over Nodes.
ask(Sys, Type, Msg, NEnt, Clients, Secs, Nodes) ->
    Start = erlang:monotonic_time(),
    Deadline = Start + erlang:convert_time_unit(Secs, second, native),
    Results = run_clients([fun() ->
                                   Offset = I * NEnt div Clients,
                                   ask_loop(Sys, Type, Msg, NEnt, Offset, Deadline, [])
                           end || I <- lists:seq(0, Clients - 1)], Nodes),
    Elapsed = us(erlang:monotonic_time() - Start) / 1.0e6,
    Lat = lists:sort(lists:append(Results)),
    {length(Lat) / Elapsed, percentile(Lat, 0.50), percentile(Lat, 0.99), length(Lat)}.

ask_loop(Sys, Type, Msg, NEnt, K, Deadline, Acc) ->
    T0 = erlang:monotonic_time(),
    case T0 < Deadline of
        true ->
            Reply = ask_one(Sys, Type, K rem NEnt + 1, Msg),
            T1 = erlang:monotonic_time(),
            check_ask(Type, Msg, Reply),
            ask_loop(Sys, Type, Msg, NEnt, K + 1, Deadline, [us(T1 - T0) | Acc]);
        false ->
            Acc
    end.

check_ask(counter, _, N) when is_integer(N) -> ok;
check_ask(echo, Msg, Msg) -> ok;
check_ask(_Type, _Msg, Other) -> erlang:error({bad_reply, Other}).

%%====================================================================
%% Client processes
%%====================================================================

%% Runs each fun in its own process, all released at once; returns their
%% results in order. A client that crashes fails the figure.
run_clients(Funs) ->
    run_clients(Funs, [node()]).

%% The same with the processes spread over Nodes, fun I (from 0) on node
%% I rem length(Nodes). A client on a node that goes away fails the figure
%% as a crash does (its monitor says noconnection).
run_clients(Funs, Nodes) ->
    Self = self(),
    Go = make_ref(),
    N = length(Nodes),
    Clients = [spawn_monitor(lists:nth(I rem N + 1, Nodes),
                             fun() ->
                                     receive Go -> ok end,
                                     Self ! {self(), Go, F()}
                             end) || {I, F} <- lists:zip(lists:seq(0, length(Funs) - 1), Funs)],
    [Pid ! Go || {Pid, _} <- Clients],
    [receive
         {Pid, Go, Result} ->
             erlang:demonitor(Ref, [flush]),
             Result;
         {'DOWN', Ref, process, Pid, Reason} ->
             [exit(P, kill) || {P, _} <- Clients],
             erlang:error({client_failed, Reason})
     end || {Pid, Ref} <- Clients].

%%====================================================================
%% Nodes
%%====================================================================

%% Starts the load nodes, runs Fun with them and stops them, also when Fun
%% fails: BENCH_CLIENT_NODES BEAM nodes bench_load<a, b, ...><tag>@127.0.0.1
%% that only run client processes. They are started once per run and serve
%% both systems alike. Their schedulers do not busy-wait (+sbwt none and
%% the same for the dirty schedulers): a load node is idle between the
%% replies it waits for, and spinning there would take the cores from
%% whichever system is measured. They are hidden nodes, so that they do not
%% join global's mesh with each other and the baseline (whose connections
%% global would otherwise cut and warn about when a node stops).
with_load_nodes(#{client_nodes := N} = Cfg, Fun) ->
    Loads = [start_load(<<($a + K)>>, Cfg) || K <- lists:seq(0, N - 1)],
    Result = try
                 Fun(Loads)
             catch
                 Class:Reason:Stack ->
                     [stop_quietly(L) || L <- Loads],
                     erlang:raise(Class, Reason, Stack)
             end,
    [stop(L) || L <- Loads],
    Result.

start_load(Letter, #{tag := Tag} = Cfg) ->
    start_peer(load, "bench_load" ++ binary_to_list(Letter) ++ Tag,
               ["-hidden", "+sbwt", "none", "+sbwtdcpu", "none", "+sbwtdio", "none",
                "-pa", filename:absname(filename:dirname(code:which(?MODULE)))], Cfg).

%% A BEAM node Name@127.0.0.1 started with peer (our cookie, Args), tracked
%% for clean-up from the moment it runs, with its OS pid noted.
start_peer(System, Name, Args, Cfg) ->
    {ok, Peer, Node} =
        peer:start(#{name => Name,
                     host => "127.0.0.1",
                     longnames => true,
                     args => ["-setcookie", atom_to_list(erlang:get_cookie()) | Args]}),
    Sys0 = #{system => System, node => Node, peer => Peer},
    track(Sys0),
    OsPid = list_to_integer(erpc:call(Node, os, getpid, [])),
    note_ospid(OsPid, Cfg),
    note_started(Node, OsPid),
    Sys = Sys0#{ospid => OsPid},
    track(Sys),
    Sys.

%% Starts a fresh node of System, runs Fun on it and stops it, also when Fun
%% fails.
with_node(System, Config, Cfg, Fun) ->
    with_started(start(System, Config, Cfg), Fun).

%% The same for a shardnode node named Prefix<tag>@127.0.0.1, started with
%% the options of shardnode:start_node/1 in Opts.
with_c_node(Prefix, Opts, Cfg, Fun) ->
    with_started(start_c(Prefix, Opts, Cfg), Fun).

with_started(Sys, Fun) ->
    Result = try
                 Fun(Sys)
             catch
                 Class:Reason:Stack ->
                     stop_quietly(Sys),
                     erlang:raise(Class, Reason, Stack)
             end,
    stop(Sys),
    Result.

start(shardnode, Config, Cfg) ->
    start_c("bench_c", #{types => [counter, echo], config => Config}, Cfg);
start(beam, _Config, #{tag := Tag, entities := Entities} = Cfg) ->
    %% the process limit must hold the memory figure's entities
    MaxProcs = max(262144, Entities + 100000),
    Sys = start_peer(beam, "bench_beam" ++ Tag,
                     ["+P", integer_to_list(MaxProcs),
                      "-pa", filename:absname(filename:dirname(code:which(bench_region)))], Cfg),
    Node = maps:get(node, Sys),
    [{ok, _} = erpc:call(Node, bench_region, start, [Type]) || Type <- [counter, echo]],
    Sys.

%% started_at: the time just before shardnode:start_node/1, which spawns
%% the OS process.
start_c(Prefix, #{config := Config} = Opts, #{tag := Tag, data_dir := DataDir} = Cfg) ->
    Name = Prefix ++ Tag ++ "@127.0.0.1",
    StartOpts = Opts#{name => Name,
                      config => Config#{data_dir => filename:join(DataDir, Name)},
                      ready_timeout => 20000},
    T0 = erlang:monotonic_time(),
    case shardnode:start_node(StartOpts) of
        {ok, Node} ->
            Sys0 = #{system => shardnode, node => Node, started_at => T0},
            track(Sys0),
            {ok, OsPid} = shardnode:os_pid(Node),
            note_ospid(OsPid, Cfg),
            note_started(Node, OsPid),
            Sys = Sys0#{ospid => OsPid},
            track(Sys),
            Sys;
        {error, Reason} ->
            erlang:error({start_shardnode, Name, Reason})
    end.

%% shardnode:stop_node/1 returns ok once the OS process has exited with
%% status 0 (a graceful leave after SIGTERM), the name has left epmd and a
%% ping gets pang; gone/2 checks all of it once more.
stop(#{system := shardnode, node := Node} = Sys) ->
    untrack(Sys),
    case shardnode:stop_node(Node) of
        ok -> gone(Node, maps:get(ospid, Sys, undefined));
        {error, Reason} -> erlang:error({stop_shardnode, Node, Reason})
    end;
stop(#{system := System, node := Node, peer := Peer} = Sys) when System =:= beam; System =:= load ->
    untrack(Sys),
    ok = peer:stop(Peer),
    gone(Node, maps:get(ospid, Sys, undefined)).

%% Node is gone: its name is not in epmd, a ping gets pang (the check of
%% shardnode_ct:gone/1), and its OS process has exited.
gone(Node, OsPid) ->
    case shardnode_poll:until(fun() -> shardnode_ct:gone(Node) end, 10000) of
        ok -> ok;
        timeout -> erlang:error({not_gone, Node})
    end,
    case OsPid of
        undefined -> ok;
        _ -> await_os_exit(OsPid, 10000)
    end.

%% At the end of a run: every node the run started is gone, and the
%% shardnode application runs no C node any more.
all_gone() ->
    Started = started(),
    [] = shardnode:which_nodes(),
    Left = [{Node, OsPid} || {Node, OsPid} <- Started,
                             not shardnode_ct:gone(Node)
                                 orelse filelib:is_file("/proc/" ++ integer_to_list(OsPid))],
    Left =:= [] orelse erlang:error({nodes_left, Left}),
    io:format("~nAll ~b nodes started by the run are gone: none in epmd, none answers a ping, "
              "no OS process left.~n", [length(Started)]).

%% peer:stop/1 returns once the node is disconnected; its OS process may
%% still be exiting.
await_os_exit(OsPid, Ms) ->
    case filelib:is_file("/proc/" ++ integer_to_list(OsPid)) of
        false -> ok;
        true when Ms =< 0 -> erlang:error({still_running, OsPid});
        true -> timer:sleep(20), await_os_exit(OsPid, Ms - 20)
    end.

%% Whatever is still running (a figure failed): stop it, reporting but not
%% raising errors.
cleanup() ->
    [stop_quietly(Sys) || Sys <- tracked()],
    [shardnode:stop_node(N) || N <- shardnode:which_nodes()],
    ok.

stop_quietly(Sys) ->
    try
        stop(Sys)
    catch
        Class:Reason ->
            io:format(standard_error, "stopping ~p: ~p:~p~n",
                      [maps:get(node, Sys), Class, Reason])
    end.

track(#{node := Node} = Sys) ->
    Others = [S || #{node := N} = S <- tracked(), N =/= Node],
    put(bench_nodes, [Sys | Others]).

untrack(#{node := Node}) ->
    put(bench_nodes, [S || #{node := N} = S <- tracked(), N =/= Node]).

tracked() ->
    case get(bench_nodes) of undefined -> []; L -> L end.

note_started(Node, OsPid) ->
    put(bench_started, [{Node, OsPid} | started()]).

started() ->
    case get(bench_started) of undefined -> []; L -> L end.

%% bench/run.sh kills what is listed here if the controller itself dies.
note_ospid(_OsPid, #{pids_file := ""}) ->
    ok;
note_ospid(OsPid, #{pids_file := File}) ->
    ok = file:write_file(File, [integer_to_list(OsPid), "\n"], [append]).

%%====================================================================
%% Statistics and output
%%====================================================================

us(Native) ->
    erlang:convert_time_unit(Native, native, nanosecond) / 1000.

percentile([], _Q) ->
    erlang:error(no_samples);
percentile(Sorted, Q) ->
    N = length(Sorted),
    lists:nth(max(1, min(N, ceil(Q * N))), Sorted).

median(Values) ->
    Sorted = lists:sort(Values),
    N = length(Sorted),
    case N rem 2 of
        1 -> lists:nth(N div 2 + 1, Sorted);
        0 -> (lists:nth(N div 2, Sorted) + lists:nth(N div 2 + 1, Sorted)) / 2
    end.

medians([M | _] = Maps) ->
    maps:from_list([{K, median([maps:get(K, X) || X <- Maps])} || K <- maps:keys(M)]).

progress(What, Fmt, Args) ->
    io:format("  ~-14s " ++ Fmt ++ "~n", [lists:flatten(What) | Args]).

fmt(X) when is_float(X), abs(X) >= 100 -> fmt(round(X));
fmt(X) when is_float(X), abs(X) >= 10 -> float_to_list(X, [{decimals, 1}]);
fmt(X) when is_float(X) -> float_to_list(X, [{decimals, 2}]);
fmt(X) when is_integer(X), X < 0 -> [$- | fmt(-X)];
fmt(X) when is_integer(X) -> thousands(integer_to_list(X)).

thousands(Digits) when length(Digits) =< 3 ->
    Digits;
thousands(Digits) ->
    Head = length(Digits) rem 3,
    {H, T} = lists:split(case Head of 0 -> 3; _ -> Head end, Digits),
    H ++ [[$\s | G] || G <- groups(T)].

groups([]) -> [];
groups([A, B, C | T]) -> [[A, B, C] | groups(T)].

print_header(#{rounds := R, entities := E, seconds := S, clients := C, window := W,
               c_window := CW}) ->
    io:format("shardnode vs BEAM baseline~n"
              "machine: ~s, ~b cores, ~s, OTP ~s (erts ~s)~n"
              "settings: ~b rounds, ~b clients, window ~b tells per client, ~b s per "
              "throughput figure, ~s hot entities, ~s entities for memory,~n"
              "          C load generator window ~b calls per client~n"
              "load average (1, 5, 15 min): ~s~n",
              [machine(), erlang:system_info(logical_processors_available), cpu_model(),
               erlang:system_info(otp_release), erlang:system_info(version),
               R, C, W, S, fmt(?HOT_ENTITIES), fmt(E), CW, loadavg()]).

machine() ->
    string:trim(os:cmd("uname -m")).

cpu_model() ->
    case file:read_file("/proc/cpuinfo") of
        {ok, Bin} ->
            case re:run(Bin, "^model name\\s*:\\s*(.*)$", [multiline, {capture, [1], list}]) of
                {match, [Model]} -> string:trim(Model);
                nomatch -> "unknown CPU"
            end;
        _ ->
            "unknown CPU"
    end.

print_table(S, B, #{entities := E, clients := C, window := W, c_window := CW,
                    client_nodes := LN}) ->
    Rows =
        [{io_lib:format("tell throughput, msg/s (~b clients, ~s counters)", [C, fmt(?HOT_ENTITIES)]),
          tell_rate, higher},
         {"CPU of the system per tell, us (its OS process, user + sys)", tell_cpu, lower},
         {io_lib:format("ask throughput, calls/s (~b clients, counter get)", [C]), ask_rate, higher},
         {"ask latency p50, us", ask_p50, lower},
         {"ask latency p99, us", ask_p99, lower},
         {"CPU of the system per ask, us", ask_cpu, lower},
         {io_lib:format("tell throughput, msg/s, the same clients spread over ~b load nodes", [LN]),
          spread_tell_rate, higher},
         {io_lib:format("CPU of the system per tell, us (~b load nodes)", [LN]), spread_tell_cpu, lower},
         {io_lib:format("ask throughput, calls/s, the same clients spread over ~b load nodes", [LN]),
          spread_ask_rate, higher},
         {io_lib:format("ask latency p50, us (~b load nodes)", [LN]), spread_ask_p50, lower},
         {io_lib:format("ask latency p99, us (~b load nodes)", [LN]), spread_ask_p99, lower},
         {io_lib:format("CPU of the system per ask, us (~b load nodes)", [LN]), spread_ask_cpu, lower},
         {io_lib:format("ask echo ~b B throughput, calls/s", [?ECHO_BYTES]), echo_rate, higher},
         {io_lib:format("ask echo ~b B latency p50, us", [?ECHO_BYTES]), echo_p50, lower},
         {io_lib:format("ask echo ~b B latency p99, us", [?ECHO_BYTES]), echo_p99, lower},
         {io_lib:format("memory per idle entity, bytes (~s counters)", [fmt(E)]), mem_per_entity, lower},
         {io_lib:format("entity creation by tell, entities/s (filling ~s)", [fmt(E)]), create_rate, higher},
         {"first message, us median: shardnode new shard (coordinator) / BEAM new entity",
          first_new_shard, lower},
         {"first message to a new entity in a hosted shard, us median", first_hosted_shard, lower},
         {io_lib:format("C load generator: ask calls/s (~b clients x ~b in flight, counter incr)",
                        [C, CW]), c_ask_rate, higher},
         {"C load generator: ask latency p50, us", c_ask_p50, lower},
         {"C load generator: ask latency p99, us", c_ask_p99, lower},
         {"C load generator: CPU of the system per ask, us", c_ask_cpu, lower},
         {io_lib:format("C load generator: tells/s (~b clients x ~b unanswered)", [C, W]),
          c_tell_rate, higher},
         {"C load generator: CPU of the system per tell, us", c_tell_cpu, lower}],
    io:format("| figure | shardnode | BEAM | ratio | ratio is |~n"
              "|---|---:|---:|---:|---|~n"),
    [begin
         Sv = maps:get(Key, S),
         Bv = maps:get(Key, B),
         {Ratio, Reads} = case Better of
                              higher -> {Sv / Bv, "shardnode/BEAM"};
                              lower -> {Bv / Sv, "BEAM/shardnode"}
                          end,
         io:format("| ~s | ~s | ~s | ~.2f | ~s |~n", [Label, fmt(Sv), fmt(Bv), Ratio, Reads])
     end || {Label, Key, Better} <- Rows],
    %% no BEAM baseline does this job
    [io:format("| ~s | ~s | n/a | n/a | - |~n", [Label, fmt(maps:get(Key, S))])
     || {Label, Key} <-
            [{io_lib:format("rebalance time for ~b shards, ms (second node up -> ~b on each node)",
                            [?REBALANCE_SHARDS, ?REBALANCE_SHARDS div 2]), rebalance_from_up},
             {io_lib:format("rebalance time for ~b shards, ms (second node started -> ~b on each node)",
                            [?REBALANCE_SHARDS, ?REBALANCE_SHARDS div 2]), rebalance_from_start}]],
    ok.
