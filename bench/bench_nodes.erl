%% The nodes of the benchmark: starting and stopping the systems under test
%% (shardnode C nodes, the BEAM baseline) and the load nodes, tracking
%% them so that a failed figure still stops them all, proving each one gone
%% after it stops, and reading the CPU time and memory of their OS
%% processes from /proc. Used by shardnode_bench and bench_load, always from
%% the controller's one process: the nodes are tracked in its process
%% dictionary.
-module(bench_nodes).

-export([with_load_nodes/2, with_node/4, with_c_node/4, with_beam_tls_node/3, with_host/3, start_c/3,
         start_c_at_once/3, stop/1, forget/1,
         stop_quietly/1, kill/1,
         all_gone/0, cleanup/0, note_ospid/2,
         cpu_us/1, cpu_us_fine/1, rss_kb/1,
         hosted/1, watch_down/3]).

%%====================================================================
%% Starting and stopping
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
%% for clean-up from the moment it runs, with its OS pid noted. Driven over
%% Erlang distribution unless PeerOpts says otherwise (connection).
start_peer(System, Name, Args, Cfg) ->
    start_peer(System, Name, Args, #{}, Cfg).

start_peer(System, Name, Args, PeerOpts, Cfg) ->
    {ok, Peer, Node} =
        peer:start(PeerOpts#{name => Name,
                             host => "127.0.0.1",
                             longnames => true,
                             args => ["-setcookie", atom_to_list(erlang:get_cookie()) | Args]}),
    Sys0 = #{system => System, node => Node, peer => Peer},
    track(Sys0),
    OsPid = list_to_integer(case PeerOpts of
                                #{connection := _} -> peer:call(Peer, os, getpid, []);
                                #{} -> erpc:call(Node, os, getpid, [])
                            end),
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

%% The BEAM baseline with TLS distribution (-proto_dist inet_tls), its
%% certificate node.pem from the directory Certs (scripts/tls-certs.sh),
%% verifying its peers as a shardnode with tls_verify = peer does; Fun runs
%% with it and it stops afterwards, also when Fun fails. The controller
%% speaks plain TCP, so it drives the node over its standard input (peer's
%% standard_io connection); only the load generator, over TLS, talks to it
%% by distribution.
with_beam_tls_node(Certs, #{tag := Tag} = Cfg, Fun) ->
    Side = fun(Extra) ->
                   [{certfile, filename:join(Certs, "node.pem")}, {keyfile, filename:join(Certs, "node.key")},
                    {cacertfile, filename:join(Certs, "ca.pem")}, {verify, verify_peer} | Extra]
           end,
    OptFile = filename:join(Certs, "beam_dist.opts"),
    ok = file:write_file(OptFile, io_lib:format("~p.~n", [[{server, Side([{fail_if_no_peer_cert, true}])},
                                                            {client, Side([])}]])),
    Sys = start_peer(beam, "bench_beam_tls" ++ Tag,
                     ["-proto_dist", "inet_tls", "-ssl_dist_optfile", OptFile,
                      "-pa", filename:absname(filename:dirname(code:which(bench_region)))],
                     #{connection => standard_io}, Cfg),
    [{ok, _} = peer:call(maps:get(peer, Sys), bench_region, start, [Type]) || Type <- [counter, echo]],
    with_started(Sys, Fun).

%% A BEAM node that hosts entities written in Erlang (Types, a map of type
%% to module, given with shardnode:host_entities/1) for the C nodes that
%% name it with --host; Fun runs with it and it stops afterwards, also when
%% Fun fails. Its schedulers do not busy-wait (+sbwt none, as the load
%% nodes'): it shares the machine's cores with its C node, which a
%% spinning scheduler would take them from.
with_host(Types, #{tag := Tag, entities := Entities} = Cfg, Fun) ->
    MaxProcs = max(262144, Entities + 100000),
    Sys = start_peer(host, "bench_host" ++ Tag,
                     ["+P", integer_to_list(MaxProcs), "+sbwt", "none", "+sbwtdcpu", "none", "+sbwtdio", "none",
                      "-pa", filename:absname(filename:dirname(code:which(shardnode))),
                      "-pa", filename:absname(filename:dirname(code:which(?MODULE)))], Cfg),
    ok = erpc:call(maps:get(node, Sys), shardnode, host_entities, [Types]),
    with_started(Sys, Fun).

%% started_at: the time just before shardnode:start_node/1, which spawns
%% the OS process.
start_c(Prefix, Opts, Cfg) ->
    {Name, StartOpts} = c_opts(Prefix, Opts, Cfg),
    T0 = erlang:monotonic_time(),
    c_started(Name, shardnode:start_node(StartOpts), T0, Cfg).

%% The same for one node per prefix, all started at once (each start_node
%% from a process of its own), each waiting ready_timeout (ms) at most;
%% the nodes in the order of the prefixes. Tracked here, as start_c's.
%% `Opts' may be a list, one element per prefix: each node's own options.
start_c_at_once(Prefixes, Opts, Cfg) ->
    T0 = erlang:monotonic_time(),
    Self = self(),
    OptsEach = case is_list(Opts) of
                   true -> Opts;
                   false -> [Opts || _ <- Prefixes]
               end,
    Named = [c_opts(P, O, Cfg) || {P, O} <- lists:zip(Prefixes, OptsEach)],
    Pids = [spawn_link(fun() -> Self ! {started, self(), shardnode:start_node(O)} end) || {_, O} <- Named],
    Results = lists:zip([N || {N, _} <- Named], [receive {started, Pid, R} -> R end || Pid <- Pids]),
    %% Every node that did start is tracked (cleanup stops it) before a
    %% failure is raised.
    Started = [c_started(Name, R, T0, Cfg) || {Name, {ok, _} = R} <- Results],
    case [{Name, Why} || {Name, {error, Why}} <- Results] of
        [] -> Started;
        Failed -> erlang:error({start_shardnode, Failed})
    end.

c_opts(Prefix, #{config := Config} = Opts, #{tag := Tag, data_dir := DataDir}) ->
    Name = Prefix ++ Tag ++ "@127.0.0.1",
    {Name, maps:merge(#{ready_timeout => 20000},
                      Opts#{name => Name, config => Config#{data_dir => filename:join(DataDir, Name)}})}.

c_started(_Name, {ok, Node}, T0, Cfg) ->
    Sys0 = #{system => shardnode, node => Node, started_at => T0},
    track(Sys0),
    {ok, OsPid} = shardnode:os_pid(Node),
    note_ospid(OsPid, Cfg),
    note_started(Node, OsPid),
    Sys = Sys0#{ospid => OsPid},
    track(Sys),
    Sys;
c_started(Name, {error, Reason}, _T0, _Cfg) ->
    erlang:error({start_shardnode, Name, Reason}).

%% shardnode:stop_node/1 returns ok once the OS process has exited with
%% status 0 (a graceful leave after SIGTERM), the name has left epmd and a
%% ping gets pang; gone/2 checks all of it once more.
stop(#{system := shardnode, node := Node} = Sys) ->
    untrack(Sys),
    case shardnode:stop_node(Node) of
        ok -> gone(Node, maps:get(ospid, Sys, undefined));
        {error, Reason} -> erlang:error({stop_shardnode, Node, Reason})
    end;
stop(#{system := System, node := Node, peer := Peer} = Sys) when System =:= beam; System =:= load; System =:= host ->
    untrack(Sys),
    ok = peer:stop(Peer),
    gone(Node, maps:get(ospid, Sys, undefined)).

%% A shardnode node killed with SIGKILL (shardnode:kill_node/1, which
%% returns once its OS process has exited), for the figures of a crash.
kill(#{system := shardnode, node := Node} = Sys) ->
    untrack(Sys),
    ok = shardnode:kill_node(Node),
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
    Exited = fun() -> not filelib:is_file("/proc/" ++ integer_to_list(OsPid)) end,
    case shardnode_poll:until(Exited, Ms, 20) of
        ok -> ok;
        timeout -> erlang:error({still_running, OsPid})
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

%% A node stopped some other way (several at once, from other processes):
%% not tracked any more; all_gone/0 still checks that it is gone.
forget(Sys) -> untrack(Sys).

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
%% The OS processes of the nodes
%%====================================================================

%% The same to the nanosecond, for the small figures of an idle node:
%% the time on a CPU of each of its threads running now
%% (/proc/PID/task/*/schedstat). cpu_us's clock ticks (10 ms) would make
%% an idle member's 1 or 2 ms over a few seconds 0 or 10 at random.
%% Threads that ended are not counted: for nodes whose threads live as
%% long as they do.
cpu_us_fine(OsPid) ->
    Dir = "/proc/" ++ integer_to_list(OsPid) ++ "/task",
    {ok, Tasks} = file:list_dir(Dir),
    Ns = [case file:read_file(filename:join([Dir, T, "schedstat"])) of
              {ok, Bin} -> binary_to_integer(hd(string:lexemes(Bin, " \n")));
              {error, _} -> 0 %% the thread ended meanwhile
          end || T <- Tasks],
    lists:sum(Ns) / 1000.

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

%% The shards Node's counter region hosts.
hosted(Node) ->
    {ok, State} = gen_server:call({counter, Node}, get_shard_region_state, 5000),
    maps:keys(State).

%% Tells Owner the moments A's member list stops showing B up (B is
%% unreachable), then shows it down or no more: {Watcher, unreachable, T},
%% {Watcher, down, T}, T in native monotonic time.
watch_down(Owner, A, B) ->
    watch_down(Owner, A, B, up).

watch_down(Owner, A, B, Was) ->
    Status = case catch gen_server:call({shardnode, A}, members, 1000) of
                 {ok, Ms} ->
                     case [St || #{node := N, status := St} <- Ms, N =:= B] of
                         [St] -> St;
                         [] -> absent
                     end;
                 _ -> Was
             end,
    Now = erlang:monotonic_time(),
    case {Was, Status} of
        {up, up} -> timer:sleep(2), watch_down(Owner, A, B, up);
        {up, _} -> Owner ! {self(), unreachable, Now}, watch_down(Owner, A, B, unreachable);
        {_, Gone} when Gone =:= down; Gone =:= absent -> Owner ! {self(), down, Now};
        _ -> timer:sleep(2), watch_down(Owner, A, B, Was)
    end.
