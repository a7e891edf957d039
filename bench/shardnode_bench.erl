%% The benchmark controller behind `make bench': the entry point, the
%% settings, the rounds, and what each figure measures.
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
%% only so much, see bench/README.md); for the "C load generator" rows it
%% runs build/bench/c_loadgen (bench/c_loadgen.c), a C node that speaks the
%% distribution protocol itself, against the same node, so that the client
%% is not the bottleneck. Rounds alternate shardnode, beam, shardnode,
%% beam, ...; every figure is the median over rounds of the per-round value.
%% The rebalance figure (a second node joins a node hosting 100 shards) has
%% no BEAM baseline and is measured on shardnode only. Every node started is
%% stopped again, also when a measurement fails, and is checked to be gone.
%%
%% The work is shared with:
%%
%%   bench_nodes    starting, stopping and tracking the nodes under test and
%%                  the load nodes, and reading their OS processes' CPU and
%%                  memory;
%%   bench_load     the load: tells, asks, the client processes, and runs of
%%                  the C load generator;
%%   bench_figures  statistics, number formatting, the progress lines, the
%%                  header and the table.
%%
%% Settings come from the environment (see bench/README.md): BENCH_ROUNDS,
%% BENCH_ENTITIES, BENCH_SECONDS, BENCH_CLIENTS, BENCH_CLIENT_NODES,
%% BENCH_WINDOW, BENCH_C_WINDOW, BENCH_C_DURABLE_WINDOW, BENCH_C_PG_WINDOW, BENCH_PG_PORT, BENCH_PG_SCRIPT,
%% BENCH_PG_BATCH, BENCH_PG_SHARDS,
%% BENCH_C_LOADGEN, BENCH_TAG, BENCH_PIDS_FILE, BENCH_DATA_DIR.
-module(shardnode_bench).

-export([main/0]).

-import(bench_figures, [fmt/1, progress/3]).

-include("bench.hrl").

%% the state-move figure: shards of its two nodes (half of them move) and
%% the clients of the traffic measured meanwhile
-define(MOVE_CONFIG, #{number_of_shards => ?MOVE_SHARDS,
                       rebalance_interval_ms => 100,
                       max_simultaneous_rebalance => ?MOVE_SHARDS,
                       rebalance_threshold => 1}).
-define(MOVE_TRAFFIC_CLIENTS, 4).
%% shards of the node that measures the first message to a new shard
%% The offered rates at which TLS and plain are compared (paced_figures):
%% well below what either sustains on this machine.
-define(PACED_ASKS, 400000).
-define(PACED_TELLS, 800000).

-define(FIRST_NUM_SHARDS, 1000).
-define(FIRST_SAMPLES, 50).
%% the rebalance figure: the settings of its two nodes
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
            bench_nodes:cleanup()
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
      c_durable_window => env_int("BENCH_C_DURABLE_WINDOW", 64, 1),
      c_pg_window => env_int("BENCH_C_PG_WINDOW", 16, 1),
      pg_port => env_int("BENCH_PG_PORT", 0, 0),
      pg_script => env_str("BENCH_PG_SCRIPT", ""),
      pg_batch => env_int("BENCH_PG_BATCH", 200, 1),
      pg_shards => env_int("BENCH_PG_SHARDS", 100, 1),
      c_loadgen => filename:absname(env_str("BENCH_C_LOADGEN", "build/bench/c_loadgen")),
      tag => env_str("BENCH_TAG", os:getpid()),
      pids_file => env_str("BENCH_PIDS_FILE", ""),
      data_dir => env_str("BENCH_DATA_DIR", "build/bench/data"),
      only => env_str("BENCH_ONLY", "")}.

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
    Cfg = Cfg0#{load_start => bench_figures:loadavg()},
    {ok, _} = application:ensure_all_started(shardnode),
    bench_figures:print_header(Cfg),
    T0 = erlang:monotonic_time(millisecond),
    PerRound = bench_nodes:with_load_nodes(
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
    bench_figures:print_table(bench_figures:medians(Ss), bench_figures:medians(Bs), Cfg),
    bench_nodes:all_gone(),
    io:format("~nload average (1, 5, 15 min) at the start: ~s, at the end: ~s~n",
              [maps:get(load_start, Cfg), bench_figures:loadavg()]),
    ok.

%% One system, one round: every figure, each on a fresh node where it
%% matters.
measure(System, Round, #{only := "replicated"} = Cfg) ->
    %% BENCH_ONLY=replicated: the rows of replicated lmdb alone (no
    %% baseline does this job)
    io:format("~nround ~b, ~s~n", [Round, label(System)]),
    case System of
        shardnode -> maps:merge(durable_figures(Cfg), replicated_figures(Cfg));
        beam -> #{}
    end;
measure(System, Round, #{only := "postgres"} = Cfg) ->
    %% BENCH_ONLY=postgres: the postgres rows alone, one server and a
    %% primary with a synchronous standby
    io:format("~nround ~b, ~s~n", [Round, label(System)]),
    case System of
        shardnode -> postgres_both(Cfg);
        beam -> #{}
    end;
measure(System, Round, #{only := "scale"} = Cfg) ->
    %% BENCH_ONLY=scale: what a member costs as the cluster grows
    %% (bench_scale), no baseline
    io:format("~nround ~b, ~s~n", [Round, label(System)]),
    case System of
        shardnode -> bench_scale:figures(Cfg);
        beam -> #{}
    end;
measure(System, Round, #{only := "limit"} = Cfg) ->
    %% BENCH_ONLY=limit: the max_active_entities rows alone
    io:format("~nround ~b, ~s~n", [Round, label(System)]),
    case System of
        shardnode -> bench_limit:figures(Cfg);
        beam -> #{}
    end;
measure(System, Round, #{only := "failover"} = Cfg) ->
    %% BENCH_ONLY=failover: the fail-over of five members with the default
    %% timings alone
    io:format("~nround ~b, ~s~n", [Round, label(System)]),
    case System of
        shardnode -> bench_failover:figures(Cfg);
        beam -> #{}
    end;
measure(System, Round, #{only := "erlang_entities"} = Cfg) ->
    %% BENCH_ONLY=erlang_entities: the Erlang-entity rows and the baseline
    %% figures they are compared with
    io:format("~nround ~b, ~s~n", [Round, label(System)]),
    case System of
        shardnode ->
            erlang_entity_figures(Cfg);
        beam ->
            M1 = bench_nodes:with_node(beam, #{}, Cfg, fun(Sys) -> throughput_figures(Sys, Cfg) end),
            M3 = bench_nodes:with_node(beam, #{}, Cfg, fun(Sys) -> memory_figures(Sys, Cfg) end),
            as_erlang_entities(maps:merge(M1, M3))
    end;
measure(System, Round, #{only := "client"} = Cfg) ->
    %% BENCH_ONLY=client: the calling side's rows (bench_client) alone
    io:format("~nround ~b, ~s~n", [Round, label(System)]),
    bench_nodes:with_node(System, #{}, Cfg, fun(Sys) -> bench_client:figures(Sys, Cfg) end);
measure(System, Round, Cfg) ->
    io:format("~nround ~b, ~s~n", [Round, label(System)]),
    M1 = bench_nodes:with_node(System, #{}, Cfg,
                               fun(Sys) -> throughput_figures(Sys, Cfg) end),
    %% right after the plain figures it is compared with, before the store
    %% figures leave a database server busy behind them
    Tls = tls_figures(System, M1, Cfg),
    M2 = bench_nodes:with_node(System, #{number_of_shards => ?FIRST_NUM_SHARDS}, Cfg,
                               fun(Sys) -> first_message_figures(Sys, Cfg) end),
    M3 = bench_nodes:with_node(System, #{}, Cfg,
                               fun(Sys) -> memory_figures(Sys, Cfg) end),
    M4 = case System of
             shardnode -> lists:foldl(fun maps:merge/2, #{},
                                      [rebalance_figures(Cfg), durable_figures(Cfg), replicated_figures(Cfg),
                                       bench_failover:figures(Cfg), bench_limit:figures(Cfg),
                                       postgres_both(Cfg), state_move_figures(Cfg),
                                       singleton_figures(Cfg), metrics_figures(Cfg),
                                       erlang_entity_figures(Cfg), bench_scale:figures(Cfg)]);
             beam -> #{}
         end,
    M = lists:foldl(fun maps:merge/2, M1, [Tls, M2, M3, M4]),
    case System of
        shardnode -> M;
        beam -> maps:merge(M, as_erlang_entities(M))
    end.

label(shardnode) -> "shardnode";
label(beam) -> "BEAM".

%%====================================================================
%% Figures: what each one measures
%%====================================================================

throughput_figures(#{ospid := OsPid} = Sys, #{clients := C, window := W, seconds := Secs} = Cfg) ->
    %% every hot entity exists before anything is timed
    bench_load:fill(Sys, counter, incr, 1, ?HOT_ENTITIES, C, W),
    Payload = binary:copy(<<"x">>, ?ECHO_BYTES),
    bench_load:fill(Sys, echo, Payload, 1, ?HOT_ENTITIES, C, W),
    Me = list_to_integer(os:getpid()),
    Cpu0 = bench_nodes:cpu_us(OsPid), Gen0 = bench_nodes:cpu_us(Me),
    {Tell, Tells} = bench_load:tell_rate(Sys, counter, incr, ?HOT_ENTITIES, C, W, Secs),
    Cpu1 = bench_nodes:cpu_us(OsPid), Gen1 = bench_nodes:cpu_us(Me),
    {AskRate, AskP50, AskP99, Asks} = bench_load:ask(Sys, counter, get, ?HOT_ENTITIES, C, Secs),
    Cpu2 = bench_nodes:cpu_us(OsPid), Gen2 = bench_nodes:cpu_us(Me),
    {EchoRate, EchoP50, EchoP99, _} = bench_load:ask(Sys, echo, Payload, ?HOT_ENTITIES, C, Secs),
    TellCpu = (Cpu1 - Cpu0) / Tells,
    AskCpu = (Cpu2 - Cpu1) / Asks,
    progress("tell", "~s msg/s, ~s us CPU per message (load generator: ~s us)",
             [fmt(Tell), fmt(TellCpu), fmt((Gen1 - Gen0) / Tells)]),
    progress("ask counter", "~s calls/s, p50 ~s us, p99 ~s us, ~s us CPU per call (load generator: ~s us)",
             [fmt(AskRate), fmt(AskP50), fmt(AskP99), fmt(AskCpu), fmt((Gen2 - Gen1) / Asks)]),
    progress("ask echo", "~s calls/s, p50 ~s us, p99 ~s us",
             [fmt(EchoRate), fmt(EchoP50), fmt(EchoP99)]),
    Spread = maps:merge(spread_figures(Sys, Cfg), bench_client:figures(Sys, Cfg)),
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
    LoadCpu = fun() -> lists:sum([bench_nodes:cpu_us(P) || #{ospid := P} <- Loads]) end,
    Cpu0 = bench_nodes:cpu_us(OsPid), Gen0 = LoadCpu(),
    {Tell, Tells} = bench_load:tell_rate(Sys, counter, incr, ?HOT_ENTITIES, C, W, Secs, Nodes),
    Cpu1 = bench_nodes:cpu_us(OsPid), Gen1 = LoadCpu(),
    {AskRate, AskP50, AskP99, Asks} = bench_load:ask(Sys, counter, get, ?HOT_ENTITIES, C, Secs, Nodes),
    Cpu2 = bench_nodes:cpu_us(OsPid), Gen2 = LoadCpu(),
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
    Cpu0 = bench_nodes:cpu_us(OsPid),
    Ask = bench_load:c_loadgen(Sys, ask, CW, Cfg),
    Cpu1 = bench_nodes:cpu_us(OsPid),
    Tell = bench_load:c_loadgen(Sys, tell, W, Cfg),
    Cpu2 = bench_nodes:cpu_us(OsPid),
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
    _ = bench_load:ask_one(Sys, counter, Warm, get),
    NewShardIds = pick_ids(1, ?FIRST_SAMPLES, N,
                                fun(Shard, Used) -> not maps:is_key(Shard, Used) end,
                                #{erlang:phash2(Warm, N) => true}),
    NewShard = [bench_load:timed_call(Sys, counter, Id, get) || Id <- NewShardIds],
    Hosted = maps:from_list([{erlang:phash2(Id, N), true} || Id <- [Warm | NewShardIds]]),
    HostedIds = pick_ids(lists:max(NewShardIds) + 1, ?FIRST_SAMPLES, N,
                              fun(Shard, _) -> maps:is_key(Shard, Hosted) end, #{}),
    NewEntity = [bench_load:timed_call(Sys, counter, Id, get) || Id <- HostedIds],
    First = bench_figures:median(NewShard),
    Second = bench_figures:median(NewEntity),
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

%% RSS growth of the node's OS process while it goes from no entities to
%% Entities idle counters (each created by one tell, then left alone).
memory_figures(#{ospid := OsPid} = Sys, #{entities := N, clients := C, window := W}) ->
    timer:sleep(200),
    Rss0 = bench_nodes:rss_kb(OsPid),
    Elapsed = bench_load:fill(Sys, counter, incr, 1, N, C, W),
    N = entity_count(Sys, counter),
    timer:sleep(500),
    Rss1 = bench_nodes:rss_kb(OsPid),
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

%% Entities written in Erlang (bench_counter_entity, a shardnode_entity
%% counter) on a host BEAM node, for a C node started with --host: the
%% tell and ask figures of the counter rows above, with the CPU of the C
%% node and of the host per message, and the memory per idle entity on
%% each. The baseline is the BEAM's own gen_server counters of those rows
%% (as_erlang_entities): the same workload, the same machine.
erlang_entity_figures(#{tag := Tag, clients := C, window := W, seconds := Secs,
                        entities := Entities} = Cfg) ->
    bench_nodes:with_host(
      #{ecounter => bench_counter_entity}, Cfg,
      fun(#{node := Host, ospid := HostPid}) ->
              {ok, L} = gen_tcp:listen(0, [{reuseaddr, true}]),
              {ok, Port} = inet:port(L),
              ok = gen_tcp:close(L),
              Opts = #{types => [counter], config => #{metrics_port => Port},
                       extra_args => ["--host", atom_to_list(Host), "--host-types", "ecounter"]},
              bench_nodes:with_c_node(
                "bench_erl", Opts, Cfg,
                fun(#{ospid := OsPid} = Sys) ->
                        %% the host has answered once a call goes through
                        ok = shardnode_poll:until(
                               fun() -> catch bench_load:ask_one(Sys, ecounter, 0, get) =:= 0 end, 20000),
                        OneCall = erlang_entity_one_call(Sys, Port),
                        bench_load:fill(Sys, ecounter, incr, 1, ?HOT_ENTITIES, C, W),
                        Me = list_to_integer(os:getpid()),
                        Cpu = fun() -> {bench_nodes:cpu_us(OsPid), bench_nodes:cpu_us(HostPid),
                                        bench_nodes:cpu_us(Me)} end,
                        {C0, H0, G0} = Cpu(),
                        {Tell, Tells} = bench_load:tell_rate(Sys, ecounter, incr, ?HOT_ENTITIES, C, W, Secs),
                        {C1, H1, G1} = Cpu(),
                        {AskRate, AskP50, AskP99, Asks} =
                            bench_load:ask(Sys, ecounter, get, ?HOT_ENTITIES, C, Secs),
                        {C2, H2, G2} = Cpu(),
                        progress("erl tell", "~s msg/s, CPU per message: C node ~s us, host ~s us "
                                 "(load generator: ~s us)",
                                 [fmt(Tell), fmt((C1 - C0) / Tells), fmt((H1 - H0) / Tells),
                                  fmt((G1 - G0) / Tells)]),
                        progress("erl ask", "~s calls/s, p50 ~s us, p99 ~s us, CPU per call: C node ~s us, "
                                 "host ~s us (callers: ~s us)",
                                 [fmt(AskRate), fmt(AskP50), fmt(AskP99), fmt((C2 - C1) / Asks),
                                  fmt((H2 - H1) / Asks), fmt((G2 - G1) / Asks)]),
                        Spread = erlang_entity_spread(Sys, HostPid, Cfg),
                        CGen = erlang_entity_c_loadgen(Sys, HostPid, Cfg),
                        Mem = erlang_entity_memory(Sys, HostPid, min(Entities, ?ERL_MEM_ENTITIES), Cfg),
                        _ = Tag,
                        (maps:merge(maps:merge(OneCall, CGen), maps:merge(Spread, Mem)))#{erl_tell_rate => Tell,
                             erl_tell_cpu => (C1 - C0 + H1 - H0) / Tells,
                             erl_tell_cpu_c => (C1 - C0) / Tells,
                             erl_tell_cpu_host => (H1 - H0) / Tells,
                             erl_ask_rate => AskRate, erl_ask_p50 => AskP50, erl_ask_p99 => AskP99,
                             erl_ask_cpu => (C2 - C1 + H2 - H1) / Asks,
                             erl_ask_cpu_c => (C2 - C1) / Asks,
                             erl_ask_cpu_host => (H2 - H1) / Asks,
                             erl_ask_cpu_caller => (G2 - G1) / Asks}
                end)
      end).

%% Where the time of one call goes: one caller, one call at a time, to an
%% Erlang entity and then to a C counter on the same node. The C node's
%% own histograms (over the Erlang entity's calls alone) split the first:
%% from reading the call to writing its reply, of which from sending it
%% to the entity's process to the completion's arrival (the host and the
%% two network legs to it).
erlang_entity_one_call(Sys, Port) ->
    _ = bench_load:ask_one(Sys, counter, 0, get),
    N = ?ERL_ONE_CALL_SAMPLES,
    Page0 = scrape(Port),
    Erl = [bench_load:timed_call(Sys, ecounter, 0, get) || _ <- lists:seq(1, N)],
    Page1 = scrape(Port),
    C = [bench_load:timed_call(Sys, counter, 0, get) || _ <- lists:seq(1, N)],
    Mean = fun(Family) ->
                   Series = fun(Suffix) -> [Family, Suffix, "\\{type=\"ecounter\"\\}"] end,
                   Diff = fun(Suffix) -> metric(Page1, Series(Suffix)) - metric(Page0, Series(Suffix)) end,
                   1.0e6 * Diff("_sum") / Diff("_count")
           end,
    Node = Mean("shardnode_reply_latency_seconds"),
    Host = Mean("shardnode_entity_process_seconds"),
    ErlUs = bench_figures:median(Erl), CUs = bench_figures:median(C),
    progress("erl one call", "~s us round trip (a C type's ~s us); in the C node, read -> reply ~s us, "
             "of which at the host (and the way there and back) ~s us; medians of ~b, means of the C node's",
             [fmt(ErlUs), fmt(CUs), fmt(Node), fmt(Host), N]),
    #{erl_one_call_us => ErlUs, erl_one_call_c_type_us => CUs,
      erl_one_call_node_us => Node, erl_one_call_host_us => Host}.

%% The same tells and asks with the clients spread over the load nodes, as
%% in spread_figures: the controller's one connection no longer limits them.
erlang_entity_spread(#{ospid := OsPid} = Sys, HostPid,
                     #{clients := C, window := W, seconds := Secs, load_nodes := Loads}) ->
    Nodes = [N || #{node := N} <- Loads],
    Cpu = fun() -> {bench_nodes:cpu_us(OsPid), bench_nodes:cpu_us(HostPid)} end,
    {C0, H0} = Cpu(),
    {Tell, Tells} = bench_load:tell_rate(Sys, ecounter, incr, ?HOT_ENTITIES, C, W, Secs, Nodes),
    {C1, H1} = Cpu(),
    {AskRate, AskP50, AskP99, Asks} = bench_load:ask(Sys, ecounter, get, ?HOT_ENTITIES, C, Secs, Nodes),
    {C2, H2} = Cpu(),
    What = io_lib:format("~b nodes", [length(Nodes)]),
    progress(["erl tell, ", What], "~s msg/s, CPU per message: C node ~s us, host ~s us",
             [fmt(Tell), fmt((C1 - C0) / Tells), fmt((H1 - H0) / Tells)]),
    progress(["erl ask, ", What], "~s calls/s, p50 ~s us, p99 ~s us, CPU per call: C node ~s us, host ~s us",
             [fmt(AskRate), fmt(AskP50), fmt(AskP99), fmt((C2 - C1) / Asks), fmt((H2 - H1) / Asks)]),
    #{erl_spread_tell_rate => Tell, erl_spread_tell_cpu => (C1 - C0 + H1 - H0) / Tells,
      erl_spread_tell_cpu_c => (C1 - C0) / Tells,
      erl_spread_ask_rate => AskRate, erl_spread_ask_p50 => AskP50, erl_spread_ask_p99 => AskP99,
      erl_spread_ask_cpu => (C2 - C1 + H2 - H1) / Asks, erl_spread_ask_cpu_c => (C2 - C1) / Asks}.

%% The C load generator's asks and tells (as in c_loadgen_figures) on the
%% Erlang counters: calls and tells arrive in bigger batches than the BEAM
%% clients send, so the C node's CPU per forwarded message is what it
%% costs, less what each wake-up costs.
erlang_entity_c_loadgen(#{ospid := OsPid} = Sys, HostPid, #{c_window := CW, window := W} = Cfg) ->
    Gen = Cfg#{c_loadgen_args => ["--type", "ecounter"]},
    Cpu = fun() -> {bench_nodes:cpu_us(OsPid), bench_nodes:cpu_us(HostPid)} end,
    {C0, H0} = Cpu(),
    Ask = bench_load:c_loadgen(Sys, ask, CW, Gen),
    {C1, H1} = Cpu(),
    Tell = bench_load:c_loadgen(Sys, tell, W, Gen),
    {C2, H2} = Cpu(),
    #{"calls" := Calls, "calls_per_s" := AskRate, "p50_us" := P50, "p99_us" := P99} = Ask,
    #{"tells" := Tells, "tells_per_s" := TellRate} = Tell,
    progress("erl C gen ask", "~s calls/s, p50 ~s us, p99 ~s us, CPU per call: C node ~s us, host ~s us",
             [fmt(AskRate), fmt(P50), fmt(P99), fmt((C1 - C0) / Calls), fmt((H1 - H0) / Calls)]),
    progress("erl C gen tell", "~s msg/s, CPU per message: C node ~s us, host ~s us",
             [fmt(TellRate), fmt((C2 - C1) / Tells), fmt((H2 - H1) / Tells)]),
    #{erl_c_ask_rate => AskRate, erl_c_ask_p50 => P50, erl_c_ask_p99 => P99,
      erl_c_ask_cpu => (C1 - C0 + H1 - H0) / Calls, erl_c_ask_cpu_c => (C1 - C0) / Calls,
      erl_c_tell_rate => TellRate, erl_c_tell_cpu => (C2 - C1 + H2 - H1) / Tells,
      erl_c_tell_cpu_c => (C2 - C1) / Tells}.

%% RSS growth of the C node and of the host while N more Erlang entities
%% are created (one tell each) and left idle.
erlang_entity_memory(#{ospid := OsPid} = Sys, HostPid, N, #{clients := C, window := W}) ->
    timer:sleep(200),
    Before = entity_count(Sys, ecounter),
    Rc0 = bench_nodes:rss_kb(OsPid), Rh0 = bench_nodes:rss_kb(HostPid),
    _ = bench_load:fill(Sys, ecounter, incr, ?HOT_ENTITIES + 1, N, C, W),
    N = entity_count(Sys, ecounter) - Before,
    timer:sleep(500),
    Rc1 = bench_nodes:rss_kb(OsPid), Rh1 = bench_nodes:rss_kb(HostPid),
    PerC = (Rc1 - Rc0) * 1024 / N, PerHost = (Rh1 - Rh0) * 1024 / N,
    progress("erl memory", "~s bytes per idle entity: C node ~s, host ~s (~s entities)",
             [fmt(PerC + PerHost), fmt(PerC), fmt(PerHost), fmt(N)]),
    #{erl_mem => PerC + PerHost, erl_mem_c => PerC, erl_mem_host => PerHost}.

%% The baseline of the Erlang-entity rows: the BEAM's gen_server counters
%% measured by the rows above, under the rows' own names.
as_erlang_entities(M) ->
    maps:from_list([{New, maps:get(Old, M)}
                    || {New, Old} <- [{erl_tell_rate, tell_rate}, {erl_tell_cpu, tell_cpu},
                                      {erl_ask_rate, ask_rate}, {erl_ask_p50, ask_p50},
                                      {erl_ask_p99, ask_p99}, {erl_ask_cpu, ask_cpu},
                                      {erl_mem, mem_per_entity},
                                      {erl_spread_tell_rate, spread_tell_rate},
                                      {erl_spread_tell_cpu, spread_tell_cpu},
                                      {erl_spread_ask_rate, spread_ask_rate},
                                      {erl_spread_ask_p50, spread_ask_p50},
                                      {erl_spread_ask_p99, spread_ask_p99},
                                      {erl_spread_ask_cpu, spread_ask_cpu},
                                      {erl_c_ask_rate, c_ask_rate}, {erl_c_ask_p50, c_ask_p50},
                                      {erl_c_ask_p99, c_ask_p99}, {erl_c_ask_cpu, c_ask_cpu},
                                      {erl_c_tell_rate, c_tell_rate}, {erl_c_tell_cpu, c_tell_cpu}],
                       maps:is_key(Old, M)]).

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
    bench_nodes:with_c_node(
      "bench_c", Opts, Cfg,
      fun(#{node := A} = SysA) ->
              Ids = pick_ids(1, N, N, fun(Shard, Used) -> not maps:is_key(Shard, Used) end, #{}),
              [1 = bench_load:ask_one(SysA, counter, Id, incr) || Id <- Ids],
              {ok, #{A := Before} = Stats0} =
                  gen_server:call({counter, A}, get_cluster_sharding_stats, ?CALL_TIMEOUT),
              {1, N} =:= {map_size(Stats0), map_size(Before)}
                  orelse erlang:error({not_all_shards_on_first_node, Stats0}),
              B = list_to_atom("bench_cb" ++ Tag ++ "@127.0.0.1"),
              Poller = start_rebalance_poller(A, B, N div 2),
              try
                  bench_nodes:with_c_node("bench_cb", Opts#{join => [A]}, Cfg,
                                          fun(#{started_at := T0}) ->
                                                  rebalance_result(Poller, T0)
                                          end)
              after
                  stop_poller(Poller)
              end
      end).

%% Durable increments: a node with state_store = lmdb (its environment in
%% the node's data_dir under build/bench/data), the hot counters created
%% first, then `incr' asks from the C load generator (each client keeping
%% BENCH_C_DURABLE_WINDOW calls in flight) and from the clients on the load
%% nodes. Every reply waits for the commit of its write. No BEAM baseline
%% does this job.
durable_figures(#{clients := C, seconds := Secs, load_nodes := Loads, c_durable_window := DW} = Cfg) ->
    bench_nodes:with_node(
      shardnode, #{state_store => lmdb}, Cfg,
      fun(Sys) ->
              #{rate := Rate, p50 := P50, p99 := P99, cpu := Cpu} = durable_asks(Sys, DW, Cfg),
              Nodes = [N || #{node := N} <- Loads],
              {LRate, LP50, LP99, _} = bench_load:ask(Sys, counter, incr, ?HOT_ENTITIES, C, Secs, Nodes),
              progress("durable, C gen", "~s incr/s, p50 ~s us, p99 ~s us, ~s us CPU per call",
                       [fmt(Rate), fmt(P50), fmt(P99), fmt(Cpu)]),
              progress("durable, load nodes", "~s incr/s, p50 ~s us, p99 ~s us",
                       [fmt(LRate), fmt(LP50), fmt(LP99)]),
              #{durable_c_rate => Rate, durable_c_p50 => P50, durable_c_p99 => P99, durable_c_cpu => Cpu,
                durable_load_rate => LRate, durable_load_p50 => LP50, durable_load_p99 => LP99}
      end).

%% On a node with a store: the hot counters created, then the C load
%% generator's `incr' asks, Window in flight per client, each answered
%% after its commit: the rate, p50, p99 and the node's CPU per call.
durable_asks(#{ospid := OsPid} = Sys, Window, #{clients := C, window := W} = Cfg) ->
    bench_load:fill(Sys, counter, incr, 1, ?HOT_ENTITIES, C, W),
    Cpu0 = bench_nodes:cpu_us(OsPid),
    Ask = bench_load:c_loadgen(Sys, ask, Window, Cfg),
    Cpu1 = bench_nodes:cpu_us(OsPid),
    #{"calls" := Calls, "calls_per_s" := Rate, "p50_us" := P50, "p99_us" := P99} = Ask,
    #{rate => Rate, p50 => P50, p99 => P99, cpu => (Cpu1 - Cpu0) / Calls}.

%% Replicated durable increments (state_replicas = 1): two shardnode nodes
%% on this machine, both with state_store = lmdb, so that every shard's
%% records are committed on its home and on its replica, the other node,
%% before a reply leaves (the two share the disk and the cores). Once every
%% shard has its replica, the C load generator asks A for the hot
%% counters, BENCH_C_DURABLE_WINDOW in flight per client (half the shards
%% live on B: forwarded). Then fail-over: B is killed with SIGKILL while a
%% client increments a counter B homed through A; the time from the kill
%% to the first increment acknowledged again (by A, from its replica), and
%% of it the part after A's member list stopped showing B up (what
%% fail-over adds to failure detection).
replicated_figures(#{clients := C, window := W, c_durable_window := DW} = Cfg) ->
    Shards = 100,
    Config = #{state_store => lmdb, state_replicas => 1, number_of_shards => Shards,
               heartbeat_interval_ms => 200, failure_timeout_ms => 1000, stable_after_ms => 1000},
    PortA = shardnode_ct:free_port(),
    SysA = bench_nodes:start_c("bench_ra", #{types => [counter], config => Config#{metrics_port => PortA}}, Cfg),
    #{node := A, ospid := OsA} = SysA,
    try
        SysB = bench_nodes:start_c("bench_rb", #{types => [counter], join => [A],
                                                 config => Config#{metrics_port => shardnode_ct:free_port()}}, Cfg),
        #{node := B, ospid := OsB} = SysB,
        Missing = fun() ->
                          case shardnode_ct:metrics_page(PortA) of
                              {ok, Page} ->
                                  shardnode_ct:metric_value(Page, <<"shardnode_shard_replicas_missing{type=\"counter\"}">>);
                              _ -> unknown
                          end
                  end,
        bench_load:fill(SysA, counter, incr, 1, ?HOT_ENTITIES, C, W),
        ok = shardnode_poll:until(fun() ->
                                          Missing() =:= 0 andalso length(bench_nodes:hosted(B)) >= Shards div 2 - 1
                                  end,
                                  ?REBALANCE_DEADLINE_MS),
        Cpu0 = bench_nodes:cpu_us(OsA) + bench_nodes:cpu_us(OsB),
        Ask = bench_load:c_loadgen(SysA, ask, DW, Cfg),
        Cpu1 = bench_nodes:cpu_us(OsA) + bench_nodes:cpu_us(OsB),
        #{"calls" := Calls, "calls_per_s" := Rate, "p50_us" := P50, "p99_us" := P99} = Ask,
        progress("replicated, C gen", "~s incr/s, p50 ~s us, p99 ~s us, ~s us CPU per call (both nodes)",
                 [fmt(Rate), fmt(P50), fmt(P99), fmt((Cpu1 - Cpu0) / Calls)]),
        OnB = bench_nodes:hosted(B),
        [Id | _] = [I || I <- lists:seq(1, ?HOT_ENTITIES), lists:member(erlang:phash2(I, Shards), OnB)],
        V0 = bench_load:ask_one(SysA, counter, Id, incr),
        Self = self(),
        Watcher = spawn_link(fun() -> bench_nodes:watch_down(Self, A, B) end),
        T0 = erlang:monotonic_time(),
        ok = bench_nodes:kill(SysB),
        {V1, Tries} = incr_until_acked(A, Id, 1),
        T1 = erlang:monotonic_time(),
        %% Each try that timed out may have been applied all the same.
        (V1 > V0 andalso V1 =< V0 + Tries) orelse erlang:error({replicated_value_lost, Id, V0, V1, Tries}),
        TUnreachable = receive {Watcher, unreachable, T} -> T after ?CALL_TIMEOUT -> erlang:error(b_never_lost) end,
        TDown = receive {Watcher, down, T2} -> T2 after ?CALL_TIMEOUT -> erlang:error(b_never_down) end,
        Total = bench_figures:us(T1 - T0) / 1000,
        AfterUnreachable = bench_figures:us(T1 - TUnreachable) / 1000,
        AfterDown = bench_figures:us(T1 - TDown) / 1000,
        progress("replicated fail-over", "~s ms from kill -9 to the first ack on the replica: ~s ms after B was "
                 "seen unreachable, ~s ms after it was down; value kept (~b)",
                 [fmt(Total), fmt(AfterUnreachable), fmt(AfterDown), V1]),
        #{repl_c_rate => Rate, repl_c_p50 => P50, repl_c_p99 => P99, repl_c_cpu => (Cpu1 - Cpu0) / Calls,
          failover_ms => Total, failover_after_unreachable_ms => AfterUnreachable,
          failover_after_down_ms => AfterDown}
    after
        bench_nodes:stop_quietly(SysA),
        [bench_nodes:stop_quietly(#{system => shardnode, node => N}) || N <- shardnode:which_nodes(),
                                                                        lists:prefix("bench_rb", atom_to_list(N))]
    end.

%% Increments Id through A until a call is acknowledged: its value, and
%% the calls it took.
incr_until_acked(A, Id, Tries) ->
    case catch gen_server:call({counter, A}, {Id, incr}, 500) of
        V when is_integer(V) -> {V, Tries};
        _ -> incr_until_acked(A, Id, Tries + 1)
    end.

%% Durable increments with state_store = postgres, on the private server
%% bench/run.sh started (BENCH_PG_PORT): the hot counters created, then the
%% C load generator's `incr' asks, BENCH_C_PG_WINDOW in flight per client
%% (16: the database's rate is reached with them, and more only wait
%% longer). Then the same
%% machine's raw rate for the same transactions into the same table:
%% pgbench on one connection (as the node uses), prepared statements (as
%% the node's), each transaction the fence statement and BENCH_PG_BATCH
%% fenced upserts of random counters sent pipelined (bench/run.sh writes
%% the script; the owner rows of its type are inserted here first), for
%% BENCH_SECONDS; upserts/s = transactions/s x batch.
postgres_figures(#{pg_port := 0}) ->
    #{};
postgres_figures(#{seconds := Secs, pg_port := Port, pg_script := Script, pg_batch := Batch,
                   pg_shards := Shards} = Cfg) ->
    Conninfo = lists:flatten(io_lib:format("host=127.0.0.1 port=~b user=postgres dbname=postgres", [Port])),
    #{rate := Rate, p50 := P50, p99 := P99, cpu := Cpu} = pg_durable_load(Conninfo, Cfg),
    Owners = os:cmd(lists:flatten(io_lib:format(
                      "psql -X -q -h 127.0.0.1 -p ~b -U postgres -c \"INSERT INTO shardnode_shard_owner "
                      "SELECT 'raw', g, 1 FROM generate_series(0, ~b) g ON CONFLICT DO NOTHING\" postgres 2>&1",
                      [Port, Shards - 1]))),
    Owners =:= "" orelse erlang:error({pg_owner_rows_failed, Owners}),
    Out = os:cmd(lists:flatten(io_lib:format(
                   "pgbench -n -M prepared -c 1 -j 1 -T ~b -h 127.0.0.1 -p ~b -U postgres -f ~s postgres 2>&1",
                   [Secs, Port, Script]))),
    Tps = case re:run(Out, "tps = ([0-9.]+)", [{capture, [1], list}]) of
              {match, [T]} -> list_to_float(T);
              nomatch -> erlang:error({pgbench_failed, Out})
          end,
    Raw = Tps * Batch,
    progress("durable, pg", "~s incr/s, p50 ~s us, p99 ~s us; raw pgbench ~s upserts/s (~s x ~b): ~.2f of it",
             [fmt(Rate), fmt(P50), fmt(P99), fmt(Raw), fmt(Tps), Batch, Rate / Raw]),
    #{pg_c_rate => Rate, pg_c_p50 => P50, pg_c_p99 => P99, pg_c_cpu => Cpu, pg_raw_rate => Raw}.

%% The postgres rows: one server, then a primary with a synchronous
%% standby, and the second's rate over the first's.
postgres_both(Cfg) ->
    M = maps:merge(postgres_figures(Cfg), postgres_sync_figures(Cfg)),
    case M of
        #{pg_c_rate := One, pg_sync_rate := Sync} when One > 0 ->
            progress("durable, pg sync / one", "~.2f of the single server's rate", [Sync / One]),
            M#{pg_sync_ratio => Sync / One};
        _ -> M
    end.

%% The same durable increments against a primary with a synchronous
%% streaming standby (scripts/pg-server.sh start, then standby ... sync:
%% every commit waits for the standby to have it), both started here on
%% this machine, and the rate as a ratio of the single server's above.
postgres_sync_figures(#{pg_port := 0}) ->
    #{};
postgres_sync_figures(Cfg) ->
    Base = string:trim(os:cmd("mktemp -d -u /tmp/sn-bench-pgsync-XXXXXX")),
    {Primary, Standby} = {Base ++ "-primary", Base ++ "-standby"},
    Script = "scripts/pg-server.sh",
    try
        {0, P} = sh(Script ++ " start " ++ Primary),
        {0, S} = sh(Script ++ " standby " ++ Standby ++ " " ++ Primary ++ " sync"),
        Conninfo = lists:flatten(io_lib:format("host=127.0.0.1,127.0.0.1 port=~s,~s user=postgres dbname=postgres "
                                               "target_session_attrs=read-write", [string:trim(P), string:trim(S)])),
        #{rate := Rate, p50 := P50, p99 := P99, cpu := Cpu} = pg_durable_load(Conninfo, Cfg),
        progress("durable, pg sync standby", "~s incr/s, p50 ~s us, p99 ~s us", [fmt(Rate), fmt(P50), fmt(P99)]),
        #{pg_sync_rate => Rate, pg_sync_p50 => P50, pg_sync_p99 => P99, pg_sync_cpu => Cpu}
    after
        [sh(Script ++ " stop " ++ D) || D <- [Standby, Primary]]
    end.

%% durable_asks/3, BENCH_C_PG_WINDOW in flight per client, on a fresh node
%% storing in the database Conninfo names.
pg_durable_load(Conninfo, #{c_pg_window := PW} = Cfg) ->
    bench_nodes:with_node(shardnode, #{state_store => postgres, postgres_conninfo => Conninfo}, Cfg,
                          fun(Sys) -> durable_asks(Sys, PW, Cfg) end).

sh(Cmd) ->
    Out = os:cmd(Cmd ++ " 2>&1; echo \"rc=$?\""),
    [Rc | Rest] = lists:reverse(string:lexemes(Out, "\n")),
    {list_to_integer(string:prefix(Rc, "rc=")), string:join(lists:reverse(Rest), "\n")}.

%% Entity state moving with its shards: a node hosting MOVE_SHARDS shards
%% holds 2 x BENCH_ENTITIES counters (each at 1); a second node joins and
%% the coordinator moves half of the shards, so BENCH_ENTITIES counters'
%% states stream to it. Measured: the time from the second node being up
%% to 100 shards on each node (a shard shows on its new home once its last
%% state has arrived), and meanwhile, the round trips of `get' calls that
%% MOVE_TRAFFIC_CLIENTS clients make through the first node to counters of
%% the shards that stay there (other traffic; calls to a moving shard wait
%% for its move by design). The moved counters are checked afterwards.
state_move_figures(#{tag := Tag, entities := E, clients := C, window := W} = Cfg) ->
    Opts = #{types => [counter], config => ?MOVE_CONFIG},
    bench_nodes:with_c_node(
      "bench_c", Opts, Cfg,
      fun(#{node := A} = SysA) ->
              bench_load:fill(SysA, counter, incr, 1, 2 * E, C, W),
              2 * E =:= entity_count(SysA, counter)
                  orelse erlang:error({not_all_counters_created, entity_count(SysA, counter)}),
              B = list_to_atom("bench_cb" ++ Tag ++ "@127.0.0.1"),
              Poller = start_rebalance_poller(A, B, ?MOVE_SHARDS div 2),
              Traffic = start_move_traffic(SysA, 2 * E),
              try
                  bench_nodes:with_c_node(
                    "bench_cb", Opts#{join => [A]}, Cfg,
                    fun(_) ->
                            {TUp, TDone} = await_rebalance(Poller),
                            Samples = stop_move_traffic(Traffic),
                            {ok, Stats} = gen_server:call({counter, A}, get_cluster_sharding_stats,
                                                          ?CALL_TIMEOUT),
                            Stayed = maps:get(A, Stats),
                            During = [{Id, Us} || {Id, Us, T} <- Samples, T >= TUp, T =< TDone],
                            Other = lists:sort([Us || {Id, Us} <- During,
                                                      maps:is_key(erlang:phash2(Id, ?MOVE_SHARDS), Stayed)]),
                            All = lists:sort([Us || {_, Us} <- During]),
                            Moved = [Id || Id <- lists:seq(1, 2 * E, max(1, E div 500)),
                                           not maps:is_key(erlang:phash2(Id, ?MOVE_SHARDS), Stayed)],
                            Wrong = [Id || Id <- Moved, bench_load:ask_one(SysA, counter, Id, get) =/= 1],
                            Wrong =:= [] orelse erlang:error({moved_counters_lost_their_value, length(Wrong)}),
                            Ms = bench_figures:us(TDone - TUp) / 1000,
                            P99 = bench_figures:percentile(Other, 0.99),
                            progress("state move", "~s counters in ~b shards moved in ~s ms; other traffic "
                                     "meanwhile: ~b calls, p99 ~s us (all calls, moving shards too: p99 ~s us)",
                                     [fmt(E), ?MOVE_SHARDS div 2, fmt(Ms), length(Other), fmt(P99),
                                      fmt(bench_figures:percentile(All, 0.99))]),
                            #{move_ms => Ms, move_other_p99 => P99}
                    end)
              after
                  stop_poller(Poller),
                  [exit(P, kill) || P <- Traffic]
              end
      end).

%% TLS distribution: the C load generator's asks and tells as in
%% c_loadgen_figures, both ends speaking TLS (certificates from
%% scripts/tls-certs.sh), on a fresh node of System (the BEAM baseline runs
%% inet_tls_dist); with the ratio of the CPU per message to the plain one
%% that System gave in this round (Plain).
tls_figures(System, #{c_ask_cpu := PlainAsk, c_tell_cpu := PlainTell}, #{data_dir := DataDir} = Cfg) ->
    Certs = filename:join(DataDir, "certs"),
    filelib:is_regular(filename:join(Certs, "ca.pem")) orelse
        begin
            Out = os:cmd("scripts/tls-certs.sh " ++ Certs ++ " 2>&1; echo rc=$?"),
            string:find(Out, "rc=0") =/= nomatch orelse erlang:error({tls_certs, Out})
        end,
    TlsCfg = Cfg#{c_loadgen_args => ["--tls-dir", Certs]},
    Measure =
        fun(Sys) ->
                %% the entities exist before anything is timed, as they do
                %% for the plain rows
                _ = bench_load:c_loadgen(Sys, ask, maps:get(c_window, Cfg), TlsCfg#{seconds => 1}),
                #{c_ask_rate := AskRate, c_ask_cpu := AskCpu, c_tell_rate := TellRate, c_tell_cpu := TellCpu} =
                    c_loadgen_figures(Sys, TlsCfg),
                progress("TLS", "CPU per ask ~.2fx plain, per tell ~.2fx plain",
                         [AskCpu / PlainAsk, TellCpu / PlainTell]),
                #{tls_ask_rate => AskRate, tls_ask_cpu => AskCpu, tls_ask_cpu_ratio => AskCpu / PlainAsk,
                  tls_tell_rate => TellRate, tls_tell_cpu => TellCpu, tls_tell_cpu_ratio => TellCpu / PlainTell}
        end,
    case System of
        shardnode ->
            Tls = #{tls_certfile => filename:join(Certs, "node.pem"), tls_keyfile => filename:join(Certs, "node.key"),
                    tls_cacertfile => filename:join(Certs, "ca.pem")},
            #{paced_ask_cpu := PlainPacedAsk, paced_tell_cpu := PlainPacedTell} =
                bench_nodes:with_c_node("bench_cp", #{types => [counter, echo], config => #{}}, Cfg,
                                        fun(Sys) -> paced_figures(Sys, Cfg) end),
            bench_nodes:with_c_node(
              "bench_ct", #{types => [counter, echo], config => Tls}, Cfg,
              fun(Sys) ->
                      Figures = Measure(Sys),
                      #{paced_ask_cpu := TlsPacedAsk, paced_tell_cpu := TlsPacedTell} = paced_figures(Sys, TlsCfg),
                      progress("TLS, paced", "at an equal offered rate, CPU per ask ~.2fx plain, per tell ~.2fx plain",
                               [TlsPacedAsk / PlainPacedAsk, TlsPacedTell / PlainPacedTell]),
                      Figures#{tls_paced_ask_cpu_ratio => TlsPacedAsk / PlainPacedAsk,
                               tls_paced_tell_cpu_ratio => TlsPacedTell / PlainPacedTell}
              end);
        beam ->
            bench_nodes:with_beam_tls_node(Certs, Cfg, Measure)
    end.

%% The hot path with the metrics endpoint off and on: the C load
%% generator's asks and tells (as c_loadgen_figures) on a fresh node
%% without metrics_port, then on one with it, scraped every second
%% meanwhile as a Prometheus would be (more often than the usual 15 s).
%% Also the page itself: its series and the time it took to render.
metrics_figures(Cfg) ->
    Run = fun(Sys) ->
                  _ = bench_load:c_loadgen(Sys, ask, maps:get(c_window, Cfg), Cfg#{seconds => 1}),
                  maps:merge(c_loadgen_figures(Sys, Cfg), paced_figures(Sys, Cfg))
          end,
    #{c_ask_rate := OffAsk, c_tell_rate := OffTell, c_ask_cpu := OffAskCpu, c_tell_cpu := OffTellCpu,
      paced_ask_cpu := OffPacedAsk, paced_tell_cpu := OffPacedTell} =
        bench_nodes:with_c_node("bench_moff", #{types => [counter, echo], config => #{}}, Cfg, Run),
    {ok, L} = gen_tcp:listen(0, [{reuseaddr, true}]),
    {ok, Port} = inet:port(L),
    ok = gen_tcp:close(L),
    bench_nodes:with_c_node(
      "bench_mon", #{types => [counter, echo], config => #{metrics_port => Port}}, Cfg,
      fun(Sys) ->
              Scraper = spawn_link(fun() -> scrape_every(Port, 1000) end),
              #{c_ask_rate := OnAsk, c_tell_rate := OnTell, c_ask_cpu := OnAskCpu, c_tell_cpu := OnTellCpu,
                paced_ask_cpu := OnPacedAsk, paced_tell_cpu := OnPacedTell} =
                  try Run(Sys) after unlink(Scraper), exit(Scraper, kill) end,
              progress("metrics, paced", "at an equal offered rate, CPU per ask ~.2fx off, per tell ~.2fx off",
                       [OnPacedAsk / OffPacedAsk, OnPacedTell / OffPacedTell]),
              Page = scrape(Port),
              Series = length([Line || Line <- binary:split(Page, <<"\n">>, [global]),
                                       Line =/= <<>>, binary:first(Line) =/= $#]),
              %% the page before this one: the scrape above rendered it
              RenderUs = 1.0e6 * metric(scrape(Port), <<"shardnode_metrics_render_seconds">>),
              progress("metrics on/off", "ask ~.3f, tell ~.3f of the throughput off; "
                       "CPU per ask ~.2fx, per tell ~.2fx; a page of ~b series rendered in ~s us",
                       [OnAsk / OffAsk, OnTell / OffTell, OnAskCpu / OffAskCpu, OnTellCpu / OffTellCpu,
                        Series, fmt(RenderUs)]),
              #{metrics_off_ask_rate => OffAsk, metrics_on_ask_rate => OnAsk, metrics_ask_ratio => OnAsk / OffAsk,
                metrics_off_tell_rate => OffTell, metrics_on_tell_rate => OnTell,
                metrics_tell_ratio => OnTell / OffTell,
                metrics_ask_cpu_ratio => OnAskCpu / OffAskCpu, metrics_tell_cpu_ratio => OnTellCpu / OffTellCpu,
                metrics_paced_ask_cpu_ratio => OnPacedAsk / OffPacedAsk,
                metrics_paced_tell_cpu_ratio => OnPacedTell / OffPacedTell,
                metrics_series => Series, metrics_render_us => RenderUs,
                metrics_render_10k_us => prom_render_10k_us()}
      end).

%% bench/prom_render_bench.c: the page writer alone over 10 000 series, the
%% median of its renderings, us.
prom_render_10k_us() ->
    Exe = os:getenv("BENCH_PROM", "build/bench/prom_render_bench"),
    Out = os:cmd(Exe),
    case re:run(Out, "series=([0-9]+) .*median_us=([0-9]+)", [{capture, all_but_first, list}]) of
        {match, [Series, Us]} ->
            progress("metrics writer", "~s series in ~s us (median of 50 renderings)",
                     [Series, Us]),
            list_to_integer(Us);
        nomatch ->
            erlang:error({prom_render_bench, Out})
    end.

scrape_every(Port, Ms) ->
    _ = scrape(Port),
    receive after Ms -> scrape_every(Port, Ms) end.

%% GET /metrics: the body.
scrape(Port) ->
    {ok, S} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}], 5000),
    ok = gen_tcp:send(S, <<"GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n">>),
    All = recv_until_closed(S, <<>>),
    [_Head, Body] = binary:split(All, <<"\r\n\r\n">>),
    Body.

recv_until_closed(S, Acc) ->
    case gen_tcp:recv(S, 0, 5000) of
        {ok, D} -> recv_until_closed(S, <<Acc/binary, D/binary>>);
        {error, closed} -> gen_tcp:close(S), Acc
    end.

metric(Page, Name) ->
    {match, [V]} = re:run(Page, ["^", Name, " ([0-9.e+-]+)$"], [multiline, {capture, all_but_first, binary}]),
    try binary_to_float(V) catch error:badarg -> float(binary_to_integer(V)) end.

%% CPU per message at an offered rate both plain and TLS sustain (the C
%% load generator's --rate: asks at ?PACED_ASKS a second, tells at
%% ?PACED_TELLS, windows of 100 so the pacing is never short of room), so
%% that the two compare at the same batching rather than at each one's
%% maximum.
paced_figures(#{ospid := OsPid} = Sys, Cfg) ->
    Extra = maps:get(c_loadgen_args, Cfg, []),
    _ = bench_load:c_loadgen(Sys, ask, 100, Cfg#{seconds => 1}),
    Cpu0 = bench_nodes:cpu_us(OsPid),
    #{"calls" := Calls} = bench_load:c_loadgen(Sys, ask, 100,
                                               Cfg#{c_loadgen_args => Extra ++ ["--rate", integer_to_list(?PACED_ASKS)]}),
    Cpu1 = bench_nodes:cpu_us(OsPid),
    #{"tells" := Tells} = bench_load:c_loadgen(Sys, tell, 100,
                                               Cfg#{c_loadgen_args => Extra ++ ["--rate", integer_to_list(?PACED_TELLS)]}),
    Cpu2 = bench_nodes:cpu_us(OsPid),
    #{paced_ask_cpu => (Cpu1 - Cpu0) / Calls, paced_tell_cpu => (Cpu2 - Cpu1) / Tells}.

%% A cluster singleton's hand-over: two nodes host the singleton
%% bench_boss (a counter), A the oldest, so it runs there. A client
%% increments it through B, one call after another, while A leaves
%% (SIGTERM): the instance stops on A and starts on B with its count.
%% Measured: from the start of the leave to the first answer after the
%% longest pause in the client's answers (the first from the instance on
%% B). Every answer must be the one before plus one: the state moved.
singleton_figures(Cfg) ->
    Opts = #{types => [counter], singletons => [{bench_boss, counter}],
             config => #{heartbeat_interval_ms => 200, retry_interval_ms => 200}},
    SysA = bench_nodes:start_c("bench_sa", Opts, Cfg),
    #{node := A} = SysA,
    try
        bench_nodes:with_c_node(
          "bench_sb", Opts#{join => [A]}, Cfg,
          fun(#{node := B}) ->
                  ok = shardnode_poll:until(
                         fun() -> {ok, A} =:= catch gen_server:call({shardnode, B}, {singleton, bench_boss}) end,
                         ?CALL_TIMEOUT),
                  [_ = gen_server:call({bench_boss, B}, incr, ?CALL_TIMEOUT) || _ <- lists:seq(1, 1000)],
                  Self = self(),
                  Client = spawn_link(fun() -> singleton_client(Self, B, 0, []) end),
                  receive {Client, warm} -> ok after ?CALL_TIMEOUT -> erlang:error(singleton_client_silent) end,
                  T0 = erlang:monotonic_time(),
                  ok = bench_nodes:stop(SysA),
                  Client ! {self(), more, 200},
                  Answers = receive {Client, answers, As} -> lists:reverse(As)
                            after 2 * ?CALL_TIMEOUT -> erlang:error(singleton_client_stuck)
                            end,
                  unlink(Client),
                  Values = [V || {_, V} <- Answers],
                  Values =:= lists:seq(1001, 1000 + length(Values))
                      orelse erlang:error({singleton_values_not_consecutive, Values}),
                  {ok, B} = gen_server:call({shardnode, B}, {singleton, bench_boss}),
                  After = [T0 | [T || {T, _} <- Answers, T >= T0]],
                  {_, Resumed} = lists:max([{T2 - T1, T2} || {T1, T2} <- lists:zip(lists:droplast(After), tl(After))]),
                  Ms = bench_figures:us(Resumed - T0) / 1000,
                  progress("singleton", "hand-over in ~s ms (leave of the oldest -> first answer on the next), "
                           "~b answers, all consecutive", [fmt(Ms), length(Values)]),
                  #{singleton_handover_ms => Ms}
          end)
    after
        %% A is gone after its leave, unless something failed first.
        lists:member(A, shardnode:which_nodes()) andalso bench_nodes:stop_quietly(SysA)
    end.

%% Increments bench_boss through Node in a loop, keeping {Time, Value};
%% says `warm' after 100 answers; on {From, more, N}, answers N more and
%% sends them all.
singleton_client(Parent, Node, N, Acc) ->
    N =:= 100 andalso (Parent ! {self(), warm}),
    receive
        {From, more, More} -> singleton_finish(From, Node, More, Acc)
    after 0 ->
        V = gen_server:call({bench_boss, Node}, incr, ?CALL_TIMEOUT),
        singleton_client(Parent, Node, N + 1, [{erlang:monotonic_time(), V} | Acc])
    end.

singleton_finish(From, _Node, 0, Acc) ->
    From ! {self(), answers, Acc};
singleton_finish(From, Node, More, Acc) ->
    V = gen_server:call({bench_boss, Node}, incr, ?CALL_TIMEOUT),
    singleton_finish(From, Node, More - 1, [{erlang:monotonic_time(), V} | Acc]).

%% Open-loop traffic: each of MOVE_TRAFFIC_CLIENTS generators starts a
%% `get' call through Sys to a random counter among 1..N every millisecond,
%% each in a process of its own, so a call that waits for its shard's move
%% holds up no other. Each answered call is kept as {Id, Microseconds,
%% Time it was answered}.
start_move_traffic(Sys, N) ->
    Self = self(),
    [spawn(fun() -> move_traffic(Self, Sys, N, 0, []) end) || _ <- lists:seq(1, ?MOVE_TRAFFIC_CLIENTS)].

move_traffic(Parent, Sys, N, Out, Acc) ->
    receive
        {sample, _, _, _} = S -> move_traffic(Parent, Sys, N, Out - 1, [S | Acc]);
        {stop, Parent} -> Parent ! {samples, self(), drain_samples(Out, Acc)}
    after 1 ->
            Self = self(),
            Id = rand:uniform(N),
            spawn(fun() ->
                          T0 = erlang:monotonic_time(),
                          _ = bench_load:ask_one(Sys, counter, Id, get),
                          T1 = erlang:monotonic_time(),
                          Self ! {sample, Id, bench_figures:us(T1 - T0), T1}
                  end),
            move_traffic(Parent, Sys, N, Out + 1, Acc)
    end.

drain_samples(0, Acc) ->
    [{Id, Us, T} || {sample, Id, Us, T} <- Acc];
drain_samples(Out, Acc) ->
    receive {sample, _, _, _} = S -> drain_samples(Out - 1, [S | Acc])
    after ?CALL_TIMEOUT -> erlang:error({traffic_calls_unanswered, Out})
    end.

stop_move_traffic(Clients) ->
    [C ! {stop, self()} || C <- Clients],
    lists:append([receive {samples, C, S} -> S after 2 * ?CALL_TIMEOUT -> erlang:error(traffic_silent) end
                  || C <- Clients]).

await_rebalance({_Pid, Mon, Ref}) ->
    receive
        {Ref, {ok, TUp, TDone}} -> {TUp, TDone};
        {Ref, {error, Reason}} -> erlang:error(Reason);
        {'DOWN', Mon, process, _, Reason} -> erlang:error({rebalance_poller_died, Reason})
    after ?REBALANCE_DEADLINE_MS + 5000 ->
            erlang:error(rebalance_poller_silent)
    end.

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
    Stamped = fun() ->
                      case Fun() of
                          true -> {ok, erlang:monotonic_time()};
                          false -> false
                      end
              end,
    Left = max(0, Deadline - erlang:monotonic_time(millisecond)),
    case shardnode_poll:value(Stamped, Left, ?REBALANCE_POLL_MS) of
        {ok, Time} -> Time;
        timeout -> erlang:error({rebalance_timeout, What})
    end.

rebalance_result(Poller, T0) ->
    {TUp, TDone} = await_rebalance(Poller),
    FromUp = bench_figures:us(TDone - TUp) / 1000,
    FromStart = bench_figures:us(TDone - T0) / 1000,
    progress("rebalance", "50 + 50 shards ~s ms after the second node was up, "
             "~s ms after it was started (up after ~s ms)",
             [fmt(FromUp), fmt(FromStart), fmt(bench_figures:us(TUp - T0) / 1000)]),
    #{rebalance_from_up => FromUp, rebalance_from_start => FromStart}.

stop_poller({Pid, Mon, Ref}) ->
    exit(Pid, kill),
    erlang:demonitor(Mon, [flush]),
    receive {Ref, _} -> ok after 0 -> ok end.

