%% Cluster singletons (docs/contract.md "Cluster singletons"): an entity
%% of a hosted type, one in the cluster, on the oldest member hosting the
%% type, reached by its name through any member; handed over with its
%% state when the oldest leaves, started again on the next oldest when it
%% crashes.
-module(shardnode_singleton_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-import(sn_test, [await/1]).

-import(shardnode_ct, [members/1, member_status/2]).

-export([suite/0, all/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([one_instance_on_the_oldest_whichever_node_is_called/1,
         a_tell_is_answered_with_the_name/1,
         the_oldest_leaves_and_the_state_moves_in_order/1,
         the_oldest_crashes_and_the_next_oldest_serves/1,
         a_proxy_is_down_only_when_its_member_stops/1,
         a_proxy_only_node_reaches_it/1,
         singleton_settings_are_checked/1]).

suite() -> [{timetrap, {minutes, 3}}].

all() ->
    [one_instance_on_the_oldest_whichever_node_is_called,
     a_tell_is_answered_with_the_name,
     the_oldest_leaves_and_the_state_moves_in_order,
     the_oldest_crashes_and_the_next_oldest_serves,
     a_proxy_is_down_only_when_its_member_stops,
     a_proxy_only_node_reaches_it,
     singleton_settings_are_checked].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(shardnode),
    Config.

end_per_suite(_Config) ->
    ?assertEqual([], shardnode:which_nodes()),
    ok.

%% Three members, A the oldest; each hosts counter and the singleton
%% boss, a counter.
init_per_testcase(singleton_settings_are_checked, Config) ->
    Config;
init_per_testcase(_Case, Config) ->
    Opts = opts(),
    {[A], Config1} = shardnode_ct:start_nodes(Config, [Opts]),
    {[B, C], Config2} = shardnode_ct:start_nodes(Config1, [Opts#{join => [A]}, Opts#{join => [A]}]),
    await(fun() -> lists:all(fun(N) -> members(N) =:= [A, B, C] end, [A, B, C]) end),
    [{nodes, [A, B, C]} | Config2].

end_per_testcase(_Case, Config) ->
    shardnode_ct:stop_all_nodes(Config).

%%====================================================================
%% Cases
%%====================================================================

%% Increments through every member count up one counter, which runs on A
%% alone; every member names A as where it runs.
one_instance_on_the_oldest_whichever_node_is_called(Config) ->
    [A, B, C] = Nodes = ?config(nodes, Config),
    Values = [gen_server:call({boss, N}, incr, 10000) || _ <- lists:seq(1, 4), N <- Nodes],
    ?assertEqual(lists:seq(1, 12), Values),
    [?assertEqual({ok, A}, gen_server:call({shardnode, N}, {singleton, boss})) || N <- Nodes],
    ?assertEqual({error, not_a_singleton}, gen_server:call({shardnode, B}, {singleton, counter})),
    await(fun() -> runs_here(A) end),
    ?assertNot(runs_here(B)),
    ?assertNot(runs_here(C)),
    %% the type itself is untouched: its entities are its own
    ?assertEqual(1, gen_server:call({counter, C}, {boss, incr})),
    %% idle for longer than passivate_idle_after_ms: the counter entity
    %% stopped (it starts afresh), the singleton kept its count
    await(fun() -> live_entities(C) =:= 0 end),
    ?assertEqual(1, gen_server:call({counter, C}, {boss, incr})),
    ?assertEqual(13, gen_server:call({boss, B}, incr, 10000)),
    %% a cast to the singleton is its message, its reply dropped
    ok = gen_server:cast({boss, C}, incr),
    ?assertEqual(15, gen_server:call({boss, C}, incr, 10000)), % the path the cast took
    ?assertEqual([], [M || {messages, Ms} <- [process_info(self(), messages)], M <- Ms]),
    ok.

%% A tell's reply comes back to the sender as {Name, Reply}.
a_tell_is_answered_with_the_name(Config) ->
    [_, B, _] = ?config(nodes, Config),
    {boss, B} ! incr,
    {boss, B} ! {incr, 5},
    ?assertEqual([{boss, 1}, {boss, 6}], [receive {boss, _} = M -> M after 10000 -> timeout end
                                          || _ <- [1, 2]]),
    ok.

%% A client streams increments through B while A, the oldest, leaves: the
%% instance stops on A and starts on B, the next oldest, with its count,
%% and the client sees every value once, in order.
the_oldest_leaves_and_the_state_moves_in_order(Config) ->
    [A, B, C] = ?config(nodes, Config),
    [_ = gen_server:call({boss, C}, incr, 10000) || _ <- lists:seq(1, 10)],
    Count = 2000,
    Self = self(),
    Stopper = spawn_link(fun() -> Self ! {stopped, shardnode:stop_node(A), now_ms()} end),
    %% Spread over about two seconds, so the leave falls inside the stream.
    [begin
         {boss, B} ! incr,
         I rem 20 =:= 0 andalso timer:sleep(20)
     end || I <- lists:seq(1, Count)],
    LastSent = now_ms(),
    Got = collect(Count, now_ms() + 30000),
    receive
        {stopped, Stopped, StoppedAt} ->
            ?assertEqual(ok, Stopped),
            ?assert(StoppedAt < LastSent, "A was gone before the stream ended")
    after 30000 -> ct:fail({stop_stuck, Stopper})
    end,
    ?assertEqual(lists:seq(11, 10 + Count), Got),
    await(fun() -> members(B) =:= [B, C] end),
    ?assertEqual({ok, B}, gen_server:call({shardnode, C}, {singleton, boss})),
    ?assertEqual(Count + 11, gen_server:call({boss, C}, incr, 10000)),
    await(fun() -> runs_here(B) end),
    ok.

%% kill -9 of A: once the others have downed it, B starts the instance
%% afresh (no store is configured) and every member reaches it.
the_oldest_crashes_and_the_next_oldest_serves(Config) ->
    [A, B, C] = ?config(nodes, Config),
    5 = gen_server:call({boss, B}, {incr, 5}, 10000),
    ok = shardnode:kill_node(A),
    await(fun() -> lists:member(member_status(B, A), [down, absent]) andalso lists:member(member_status(C, A), [down, absent]) end),
    ?assertEqual({ok, B}, gen_server:call({shardnode, C}, {singleton, boss})),
    ?assertEqual(1, call_until_served(C, incr)),
    ?assertEqual(2, gen_server:call({boss, B}, incr, 10000)),
    await(fun() -> runs_here(B) end),
    ok.

%% A monitor on {boss, C} is not triggered when the instance moves (A
%% leaves); it gets 'DOWN' when C itself stops.
a_proxy_is_down_only_when_its_member_stops(Config) ->
    [A, B, C] = ?config(nodes, Config),
    1 = gen_server:call({boss, C}, incr, 10000),
    Ref = erlang:monitor(process, {boss, C}),
    ok = shardnode:stop_node(A),
    await(fun() -> members(B) =:= [B, C] end),
    ?assertEqual(2, gen_server:call({boss, C}, incr, 10000)),
    receive {'DOWN', Ref, _, _, Early} -> ct:fail({down_while_moving, Early}) after 500 -> ok end,
    ok = shardnode:stop_node(C),
    receive {'DOWN', Ref, process, {boss, C}, _} -> ok after 10000 -> ct:fail(no_down) end,
    ?assertEqual(3, gen_server:call({boss, B}, incr, 10000)),
    ok.

%% A proxy-only member (it hosts nothing) registers the name too and routes
%% to the instance on A; it never runs it, not even once A leaves.
a_proxy_only_node_reaches_it(Config) ->
    [A, B, _] = ?config(nodes, Config),
    {[P], _} = shardnode_ct:start_nodes(Config, [(opts())#{join => [A], proxy_only => true}]),
    ?assertEqual(1, call_until_served(P, incr)),
    ?assertEqual(2, gen_server:call({boss, A}, incr, 10000)),
    ok = shardnode:stop_node(A),
    await(fun() -> {ok, B} =:= gen_server:call({shardnode, P}, {singleton, boss}) end),
    ?assertEqual(3, call_until_served(P, incr)),
    ?assertNot(runs_here(P)),
    ok = shardnode:stop_node(P).

%% A singleton named as a type, or whose type the node does not host, is
%% refused at start with one line saying why.
singleton_settings_are_checked(_Config) ->
    Refused = fun(Args) ->
                      {error, {exited, 2, Lines}} =
                          shardnode:start_node(#{name => "bad@127.0.0.1", extra_args => Args}),
                      Lines
              end,
    ?assertMatch([_ | _], [L || L <- Refused(["--singleton", "counter=counter"]),
                                binary:match(L, <<"is an entity type's">>) =/= nomatch]),
    ?assertMatch([_ | _], [L || L <- Refused(["--types", "echo", "--singleton", "boss=counter"]),
                                binary:match(L, <<"not one of --types">>) =/= nomatch]),
    ?assertMatch([_ | _], [L || L <- Refused(["--singleton", "boss"]),
                                binary:match(L, <<"expected NAME=TYPE">>) =/= nomatch]),
    ok.

%%====================================================================
%% Helpers
%%====================================================================

opts() ->
    #{types => [counter, echo],
      singletons => [{boss, counter}],
      config => #{heartbeat_interval_ms => 200, rebalance_interval_ms => 300, retry_interval_ms => 300,
                  failure_timeout_ms => 1000, stable_after_ms => 1000,
                  %% entities idle this long stop; the singleton does not
                  passivate_idle_after_ms => 200}}.

%% Live entities of counter through all of the cluster's regions.
live_entities(Node) ->
    {ok, Stats} = gen_server:call({counter, Node}, get_cluster_sharding_stats, 5000),
    lists:sum([Count || PerNode <- maps:values(Stats), Count <- maps:values(PerNode)]).

%% Whether the node's log says the instance runs there (and has not been
%% handed over since).
runs_here(Node) ->
    {ok, Lines} = shardnode:output(Node),
    [L || L <- Lines, binary:match(L, <<"singleton boss: runs here">>) =/= nomatch] =/= [].

%% A call made while the instance may still be starting elsewhere.
call_until_served(Node, Msg) ->
    Try = fun() ->
                  try gen_server:call({boss, Node}, Msg, 2000) of
                      V -> {ok, V}
                  catch exit:_ -> false
                  end
          end,
    case shardnode_poll:value(Try, 15000) of
        {ok, V} -> V;
        timeout -> ct:fail({not_served, Node})
    end.

now_ms() -> erlang:monotonic_time(millisecond).

%% The replies {boss, V} of Count tells, as many as come by Deadline.
collect(0, _Deadline) ->
    [];
collect(Count, Deadline) ->
    Left = max(0, Deadline - now_ms()),
    receive {boss, V} -> [V | collect(Count - 1, Deadline)]
    after Left -> []
    end.



