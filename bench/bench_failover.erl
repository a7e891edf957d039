%% Fail-over with the default timings (docs/contract.md "A cluster",
%% "Fail-over"): five shardnode nodes on this machine, in-memory counters
%% spread over all of them, and clients incrementing random counters
%% through A. The youngest member, E, is killed with SIGKILL; then every
%% counter E homed is asked through A, each by its own process, until it
%% answers again (from 0: no store). Reported: the time from the kill until
%% the last of them answers, and of it the part after A's member list
%% showed E unreachable (detection: failure_timeout_ms) and after E was
%% down (stable_after_ms later): the wait for E's lease, which the
%% lease_lapsed reports cut to a heartbeat or so (target: at most 1 s).
-module(bench_failover).

-export([figures/1]).

-define(SHARDS, 100).
-define(IDS, 2000).
-define(LOADERS, 8).
-define(DEADLINE_MS, 120000).

figures(Cfg) ->
    Config = #{number_of_shards => ?SHARDS},
    SysA = bench_nodes:start_c("bench_fa", #{types => [counter], config => Config}, Cfg),
    #{node := A} = SysA,
    Others = [bench_nodes:start_c(P, #{types => [counter], join => [A], config => Config}, Cfg)
              || P <- ["bench_fb", "bench_fc", "bench_fd", "bench_fe"]],
    All = [SysA | Others],
    try
        run(A, maps:get(node, lists:last(Others)), lists:last(Others), length(All))
    after
        [bench_nodes:stop_quietly(S) || S <- lists:reverse(All), is_alive(S)]
    end.

is_alive(#{node := N}) -> lists:member(N, shardnode:which_nodes()).

run(A, E, SysE, N) ->
    ok = shardnode_poll:until(fun() -> length(up_members(A)) =:= N end, ?DEADLINE_MS),
    %% every counter once, so every shard has its home (spread by the
    %% least-shards allocation over the five)
    [_ = call(A, I, incr, 5000) || I <- lists:seq(1, ?IDS)],
    OnE = bench_nodes:hosted(E),
    Victims = [I || I <- lists:seq(1, ?IDS), lists:member(erlang:phash2(I, ?SHARDS), OnE)],
    Victims =/= [] orelse erlang:error(nothing_homed_on_e),
    Loaders = [spawn_link(fun() -> load(A) end) || _ <- lists:seq(1, ?LOADERS)],
    Self = self(),
    Watcher = spawn_link(fun() -> bench_nodes:watch_down(Self, A, E) end),
    T0 = erlang:monotonic_time(),
    ok = bench_nodes:kill(SysE),
    Askers = [spawn_link(fun() -> Self ! {answered, I, ask_until_answered(A, I)} end) || I <- Victims],
    Times = [receive {answered, I, T} -> T after ?DEADLINE_MS -> erlang:error({never_answered, I}) end
             || I <- Victims],
    T1 = lists:max(Times),
    [begin unlink(P), exit(P, kill) end || P <- Loaders ++ Askers],
    TUnreachable = receive {Watcher, unreachable, Tu} -> Tu after ?DEADLINE_MS -> erlang:error(e_never_lost) end,
    TDown = receive {Watcher, down, Td} -> Td after ?DEADLINE_MS -> erlang:error(e_never_down) end,
    Ms = fun(From) -> bench_figures:us(T1 - From) / 1000 end,
    bench_figures:progress("fail-over (5)", "~s ms from kill -9 until all ~b counters E homed answer: "
                           "~s ms after E was seen unreachable, ~s ms after it was down",
                           [bench_figures:fmt(Ms(T0)), length(Victims), bench_figures:fmt(Ms(TUnreachable)),
                            bench_figures:fmt(Ms(TDown))]),
    #{failover5_ms => Ms(T0), failover5_after_unreachable_ms => Ms(TUnreachable),
      failover5_after_down_ms => Ms(TDown)}.

%% Random increments through A, as fast as they are answered.
load(A) ->
    _ = call(A, rand:uniform(?IDS), incr, 1000),
    load(A).

%% Asks Id through A until it answers: the moment it did.
ask_until_answered(A, Id) ->
    case call(A, Id, get, 500) of
        V when is_integer(V) -> erlang:monotonic_time();
        _ -> ask_until_answered(A, Id)
    end.

call(Node, Id, Msg, Timeout) ->
    catch gen_server:call({counter, Node}, {Id, Msg}, Timeout).

up_members(Node) ->
    case catch gen_server:call({shardnode, Node}, members, 2000) of
        {ok, Ms} -> [M || #{status := up, node := M} <- Ms];
        _ -> []
    end.
