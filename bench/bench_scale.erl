%% What a member costs as the cluster grows (docs/contract.md "A cluster"):
%% for each size N of BENCH_SCALE_SIZES (16 and 64 by default; 256 too
%% with BENCH_SCALE_SIZES=16,64,256), N shardnode members on this machine
%% with the default timings and the memory store — the first started
%% alone, the other N-1 at once, each joining through it. Reported:
%%
%%   formation: from the start of the N-1 until every member lists all N
%%     up;
%%   idle CPU per member: the CPU time of all N OS processes over
%%     BENCH_SCALE_IDLE_S seconds (5) with no message sent, over N, in ms
%%     of CPU per second (to the nanosecond: bench_nodes:cpu_us_fine),
%%     once the cluster has settled (settle/4);
%%   distribution packets per member: the packets all N members sent and
%%     received over the same window (each member's metrics page,
%%     shardnode_dist_packets_total), over N, per second: what the
%%     protocol asks of a member, which a machine running every member
%%     alone would see, whatever the idle CPU of N processes sharing two
%%     cores says;
%%   memory per member: the resident size of the N OS processes, over N;
%%   fail-over: from kill -9 of the youngest until the first member lists
%%     it down (what the cluster's watching costs to decide).
%%
%% Beyond six members a member keeps connections to a dozen or so others
%% (its ring neighbours, the grantors, its seed); every member heartbeats
%% the grantors, the five oldest, and what still grows with the size is
%% their cost. 256 members fit a 24 GB machine with the default settings
%% (about 12 MB each once formed); an earlier release, which sent every
%% member whole reachability tables after a crash, ran it out of memory,
%% and one that told every member of each change connected every member
%% to every other at the first crash.
%%
%% Every member of a size is stopped before the next size starts.
-module(bench_scale).

-export([figures/1]).

-define(DEADLINE_MS, 180000).

figures(Cfg) ->
    Sizes = sizes(),
    lists:foldl(fun(N, Acc) -> maps:merge(Acc, size_figures(N, Cfg)) end, #{}, Sizes).

sizes() ->
    case os:getenv("BENCH_SCALE_SIZES") of
        false -> [16, 64];
        "" -> [16, 64];
        S -> [list_to_integer(X) || X <- string:lexemes(S, ",")]
    end.

idle_seconds() ->
    case os:getenv("BENCH_SCALE_IDLE_S") of
        false -> 5;
        "" -> 5;
        S -> list_to_integer(S)
    end.

size_figures(N, Cfg) ->
    Ports = shardnode_ct:free_ports(N),
    Opts = fun(Port) -> #{types => [counter], config => #{metrics_port => Port}, ready_timeout => ?DEADLINE_MS} end,
    Tag = "bench_s" ++ integer_to_list(N) ++ "_",
    First = bench_nodes:start_c(Tag ++ "1_", Opts(hd(Ports)), Cfg),
    #{node := A} = First,
    T0 = erlang:monotonic_time(),
    Others = try
                 bench_nodes:start_c_at_once([Tag ++ integer_to_list(K) ++ "_" || K <- lists:seq(2, N)],
                                             [(Opts(P))#{join => [A]} || P <- tl(Ports)], Cfg)
             catch
                 Class:Reason:Stack ->
                     bench_nodes:stop_quietly(First),
                     erlang:raise(Class, Reason, Stack)
             end,
    All = [First | Others],
    Nodes = [Node || #{node := Node} <- All],
    try
        ok = shardnode_poll:until(fun() -> lists:all(fun(X) -> length(up_members(X)) =:= N end, Nodes) end,
                                  ?DEADLINE_MS, 100),
        Formed = bench_figures:us(erlang:monotonic_time() - T0) / 1000,
        Pids = [P || #{ospid := P} <- All],
        settle(Pids, N, erlang:monotonic_time(millisecond) + 60000, []),
        Packets0 = packets(Ports),
        P0 = erlang:monotonic_time(),
        Idle = idle_cpu_ms(Pids, N, idle_seconds() * 1000),
        Packets = (packets(Ports) - Packets0) / (bench_figures:us(erlang:monotonic_time() - P0) / 1.0e6) / N,
        RssMb = lists:sum([bench_nodes:rss_kb(P) || P <- Pids]) / 1024 / N,
        Victim = lists:last(All),
        #{node := V} = Victim,
        Self = self(),
        Watcher = spawn_link(fun() -> bench_nodes:watch_down(Self, A, V) end),
        K0 = erlang:monotonic_time(),
        ok = bench_nodes:kill(Victim),
        TDown = receive {Watcher, down, Td} -> Td after ?DEADLINE_MS -> erlang:error({never_down, N}) end,
        Down = bench_figures:us(TDown - K0) / 1000,
        bench_figures:progress("scale " ++ integer_to_list(N), "formed in ~s ms; idle CPU ~s ms/s, ~s packets/s and "
                               "~s MB per member; a kill -9 seen down after ~s ms",
                               [bench_figures:fmt(Formed), bench_figures:fmt(Idle), bench_figures:fmt(Packets),
                                bench_figures:fmt(RssMb), bench_figures:fmt(Down)]),
        maps:from_list([{{scale_formed_ms, N}, Formed}, {{scale_idle_cpu_ms, N}, Idle},
                        {{scale_packets_per_s, N}, Packets}, {{scale_rss_mb, N}, RssMb}, {{scale_down_ms, N}, Down}])
    after
        stop_all([S || S = #{node := Node} <- All, lists:member(Node, shardnode:which_nodes())])
    end.

%% CPU per member over a window of Ms ms with nothing sent, in ms per
%% second.
idle_cpu_ms(Pids, N, Ms) ->
    Cpu0 = lists:sum([bench_nodes:cpu_us_fine(P) || P <- Pids]),
    W0 = erlang:monotonic_time(),
    timer:sleep(Ms), %% the window measured: nothing to wait for
    Cpu1 = lists:sum([bench_nodes:cpu_us_fine(P) || P <- Pids]),
    Wall = bench_figures:us(erlang:monotonic_time() - W0) / 1.0e6,
    (Cpu1 - Cpu0) / 1000 / Wall / N.

%% Returns once a formed cluster has settled: the admissions' lists and
%% the regions' registrations still going round cost CPU for a few seconds
%% after every member lists every other up. Settled: three 2-second
%% windows in a row within 15 % of each other (two were not enough: one
%% run of 256 measured 0.80 ms/s where its members spent 0.55 to 0.60
%% later), or the deadline passed.
settle(Pids, N, Deadline, Last) ->
    Now = idle_cpu_ms(Pids, N, 2000),
    Window = lists:sublist([Now | Last], 3),
    Settled = length(Window) =:= 3 andalso lists:max(Window) - lists:min(Window) =< 0.15 * lists:max(Window),
    case Settled orelse erlang:monotonic_time(millisecond) > Deadline of
        true -> ok;
        false -> settle(Pids, N, Deadline, Window)
    end.

%% The distribution packets, in and out, of every member whose metrics
%% port is in Ports, summed (the window's two reads are what the caller
%% compares; the scrapes' own HTTP is no distribution traffic).
packets(Ports) ->
    lists:sum([packets_of(P) || P <- Ports]).

packets_of(Port) ->
    {ok, Page} = shardnode_ct:metrics_page(Port),
    shardnode_ct:metric_value(Page, <<"shardnode_dist_packets_total{direction=\"in\"}">>)
        + shardnode_ct:metric_value(Page, <<"shardnode_dist_packets_total{direction=\"out\"}">>).

%% Stops the members, youngest first, several at a time.
stop_all(Systems) ->
    Self = self(),
    Pids = [spawn(fun() -> Self ! {stopped, self(), catch shardnode:stop_node(Node)} end)
            || #{node := Node} <- lists:reverse(Systems)],
    [receive {stopped, P, _} -> ok end || P <- Pids],
    [bench_nodes:forget(S) || S <- Systems],
    %% One that did not stop by itself is killed.
    [shardnode:kill_node(Node) || #{node := Node} <- Systems, lists:member(Node, shardnode:which_nodes())],
    ok.

up_members(Node) ->
    case catch gen_server:call({shardnode, Node}, members, 5000) of
        {ok, Ms} -> [M || #{status := up, node := M} <- Ms];
        _ -> []
    end.
