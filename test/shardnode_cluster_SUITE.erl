%% Several C nodes form one cluster: members converge, each entity type's
%% coordinator runs on the oldest member, shards spread evenly over the
%% regions, any node reaches any entity, and the cluster carries on when a
%% member leaves (the coordinator's too) or is downed.
%%
%% A node that joins gets shards moved to it (rebalancing, with handoff that
%% loses and reorders nothing). A member that stops answering (paused with
%% SIGSTOP, which keeps its connections open, as a hung machine would) is
%% found unreachable and downed by the majority; a node left in the minority
%% downs itself, and neither runs an entity while it lacks a quorum.
%%
%%   rebar3 ct --dir test --suite shardnode_cluster_SUITE
-module(shardnode_cluster_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-import(sn_test, [await/1, call/3, same_up_members/1]).

-import(shardnode_ct, [members/1, pause/1, resume/1, member_status/2]).

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([stream/5]). %% runs on the BEAM peers too
-export([three_nodes_converge/1,
         five_nodes_started_at_once/1,
         a_crash_among_ring_watchers_connects_nobody_to_everyone/1,
         two_members_killed_and_restarted_at_once/1,
         crash_is_seen_cluster_wide_and_said_once/1,
         last_members_stopped_at_once_exit_promptly/1,
         fourth_node_joins_under_load/1,
         beam_clients_on_every_node_during_a_join/1,
         shards_spread_and_any_node_reaches_any_entity/1,
         graceful_leave_of_a_member/1,
         coordinator_node_leaves/1,
         coordinator_node_leaves_under_load/1,
         unreachable_member_is_downed_by_hand/1,
         paused_member_is_downed_and_stays_silent/1,
         minority_downs_itself/1,
         cut_off_seed_admits_nobody/1,
         downed_node_rejoins_under_its_name/1,
         remembered_entities_restart_after_a_crash/1,
         min_members_hold_allocation_back/1,
         proxy_only_node_routes_and_hosts_nothing/1,
         crashed_proxy_does_not_hold_up_handoffs/1,
         rebalance_after_a_crash_does_not_wait_for_the_dead/1,
         cluster_stats_cover_every_region/1,
         graceful_shutdown_of_a_region_hands_off/1,
         of_two_claims_to_a_shard_the_newer_epoch_keeps_it/1]).

-define(SHARDS, 30).

suite() -> [{timetrap, {minutes, 3}}].

all() ->
    [three_nodes_converge,
     five_nodes_started_at_once,
     a_crash_among_ring_watchers_connects_nobody_to_everyone,
     two_members_killed_and_restarted_at_once,
     crash_is_seen_cluster_wide_and_said_once,
     last_members_stopped_at_once_exit_promptly,
     fourth_node_joins_under_load,
     beam_clients_on_every_node_during_a_join,
     shards_spread_and_any_node_reaches_any_entity,
     graceful_leave_of_a_member,
     coordinator_node_leaves,
     coordinator_node_leaves_under_load,
     unreachable_member_is_downed_by_hand,
     paused_member_is_downed_and_stays_silent,
     minority_downs_itself,
     cut_off_seed_admits_nobody,
     downed_node_rejoins_under_its_name,
     remembered_entities_restart_after_a_crash,
     min_members_hold_allocation_back,
     proxy_only_node_routes_and_hosts_nothing,
     crashed_proxy_does_not_hold_up_handoffs,
     rebalance_after_a_crash_does_not_wait_for_the_dead,
     cluster_stats_cover_every_region,
     graceful_shutdown_of_a_region_hands_off,
     of_two_claims_to_a_shard_the_newer_epoch_keeps_it].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(shardnode),
    Config.

end_per_suite(_Config) ->
    ?assertEqual([], shardnode:which_nodes()),
    ok.

%% min_nr_of_members 2: one node alone starts the cluster, and no more.
init_per_testcase(min_members_hold_allocation_back, Config) ->
    Opts = #{config => #{number_of_shards => ?SHARDS, heartbeat_interval_ms => 200,
                         min_nr_of_members => 2, retry_interval_ms => 200}},
    {[A], Config1} = shardnode_ct:start_nodes(Config, [Opts]),
    [{nodes, [A]}, {opts, Opts} | Config1];
%% The case starts its nodes itself, all at once.
init_per_testcase(five_nodes_started_at_once, Config) ->
    Config;
init_per_testcase(a_crash_among_ring_watchers_connects_nobody_to_everyone, Config) ->
    Config;
%% Three nodes: the first starts the cluster, the others join through it.
init_per_testcase(Case, Config) ->
    Opts = case_opts(Case),
    {[A], Config1} = shardnode_ct:start_nodes(Config, [Opts]),
    {[B, C], Config2} = shardnode_ct:start_nodes(Config1, [Opts#{join => [A]}, Opts#{join => [A]}]),
    await_members([A, B, C], [A, B, C]),
    [{nodes, [A, B, C]} | Config2].

end_per_testcase(_Case, Config) ->
    %% A test that failed with a node paused must not leave it paused.
    [resume(N) || N <- shardnode:which_nodes()],
    %% Nodes a case started itself (a fourth member) and did not get to
    %% stop, because it failed first, are stopped here too.
    shardnode_ct:stop_all_nodes(Config).

%%====================================================================
%% Cases
%%====================================================================

%% Two regions report one shard — as after a hand-over of the coordinator
%% while a region kept a shard another was given, or when a member comes
%% back with shards of its own: the claim with the newer epoch keeps it,
%% and the other region stops its copy, whichever report came first. The
%% test's process makes the second claim, speaking the region protocol
%% (docs/protocol.md) to the real coordinator: a region under the type's
%% name that registers and reports what it hosts.
of_two_claims_to_a_shard_the_newer_epoch_keeps_it(Config) ->
    [A, B, C] = Nodes = ?config(nodes, Config),
    Id = 7,
    S = erlang:phash2(Id, ?SHARDS),
    [?assertEqual(N, call(B, Id, incr)) || N <- lists:seq(1, 5)],
    [Home] = [N || N <- Nodes, hosts(N, Id)],
    Coordinator = {shardnode_coordinator_counter, A},
    %% The coordinator orders a region by the type's registered name.
    true = register(counter, self()),
    Coordinator ! {'$shardnode', register, self()},
    receive {'$shardnode', registered, _} -> ok after 10000 -> ct:fail(not_registered) end,
    %% Stale claims — one that states no epoch (a v0.1.0 region's report),
    %% and epoch 0, older than any the coordinator gave: each is told where
    %% the shard lives, and the home keeps serving it.
    lists:foreach(
      fun(Report) ->
              Coordinator ! Report,
              receive
                  {'$shardnode', shard_home, S, HomePid} -> ?assertEqual(Home, node(HomePid))
              after 10000 -> ct:fail({stale_claim_not_answered, Report})
              end
      end, [{'$shardnode', hosting, self(), [S]}, {'$shardnode', hosting, self(), [S], [0]}]),
    ?assertEqual(6, call(C, Id, incr)),
    ?assert(hosts(Home, Id)),
    %% A newer claim: the home stops its copy, and the shard's messages
    %% come here, through any member.
    Coordinator ! {'$shardnode', hosting, self(), [S], [1 bsl 40]},
    await(fun() -> not hosts(Home, Id) end),
    Caller = self(),
    [spawn_link(fun() -> Caller ! {answered, N, catch call(N, Id, incr)} end) || N <- Nodes],
    Forwarded = [receive {'$gen_call', From, {Id, incr}} -> gen_server:reply(From, here), From
                 after 10000 -> ct:fail(not_forwarded_to_the_newer_claim)
                 end || _ <- Nodes],
    ?assertEqual(3, length(Forwarded)),
    [receive {answered, N, Reply} -> ?assertEqual(here, Reply) after 10000 -> ct:fail({no_answer, N}) end
     || N <- Nodes],
    ?assertEqual([], [N || N <- Nodes, hosts(N, Id)], "no member serves the shard"),
    unregister(counter),
    {ok, Lines} = shardnode:output(Home),
    ?assertNotEqual([], [L || L <- Lines, binary:match(L, <<"by a newer claim">>) =/= nomatch]).

%% Every node lists the same members in the same order, oldest first, and
%% names the oldest as every type's coordinator.
three_nodes_converge(Config) ->
    [A, _, _] = Nodes = ?config(nodes, Config),
    Expected = {ok, [#{node => M, status => up} || M <- Nodes]},
    [?assertEqual(Expected, gen_server:call({shardnode, N}, members)) || N <- Nodes],
    [?assertEqual({ok, A}, gen_server:call({shardnode, N}, {coordinator, T}))
     || N <- Nodes, T <- [counter, kv, echo]],
    ok.

%% Entities addressed through all three nodes: the 30 shards end up 10 on
%% each region, every entity exists once (its count is the same through
%% every node), and a tell through one node is answered from another.
shards_spread_and_any_node_reaches_any_entity(Config) ->
    Nodes = ?config(nodes, Config),
    Ids = ids_covering_all_shards(),
    [?assertEqual(1, call(lists:nth(1 + I rem 3, Nodes), I, incr)) || I <- Ids],
    [?assertEqual(1, call(N, I, get)) || I <- Ids, N <- Nodes],
    Counts = [shard_count(N) || N <- Nodes],
    ?assertEqual([10, 10, 10], Counts),
    [begin
         {counter, N} ! {I, incr},
         receive {counter, I, V} -> ?assertEqual(2, V)
         after 5000 -> ct:fail({no_tell_reply, N, I})
         end
     end || {N, I} <- lists:zip(Nodes, lists:sublist(Ids, 3))],
    ok.

%% A member leaves (SIGTERM): the others remove it, its shards are
%% allocated again among them, and every entity answers.
graceful_leave_of_a_member(Config) ->
    [A, B, C] = ?config(nodes, Config),
    Ids = ids_covering_all_shards(),
    [1 = call(A, I, incr) || I <- Ids],
    ok = shardnode:stop_node(B),
    await_members([A, C], [A, C]),
    [?assert(is_integer(call(N, I, get))) || I <- Ids, N <- [A, C]],
    ?assertEqual(?SHARDS, shard_count(A) + shard_count(C)),
    ok.

%% The oldest member leaves: the next oldest takes the coordinator over,
%% rebuilds the allocation from what the regions report, and the shards it
%% already hosted keep their entities.
coordinator_node_leaves(Config) ->
    [A, B, C] = ?config(nodes, Config),
    Ids = ids_covering_all_shards(),
    [1 = call(A, I, incr) || I <- Ids],
    {ok, OnB} = gen_server:call({counter, B}, get_shard_region_state),
    ok = shardnode:stop_node(A),
    await_members([B, C], [B, C]),
    [?assertEqual({ok, B}, gen_server:call({shardnode, N}, {coordinator, counter})) || N <- [B, C]],
    %% entities of shards B hosted kept their state across the hand-over
    [?assertEqual(1, call(C, I, get)) || Live <- maps:values(OnB), I <- Live],
    [?assert(is_integer(call(C, I, get))) || I <- Ids],
    ?assertEqual(?SHARDS, shard_count(B) + shard_count(C)),
    ok.

%% The coordinator's node leaves (SIGTERM) while a client streams numbered
%% tells through another node: its shards are handed off first, so every
%% reply arrives, once, in order per entity; then it is gone from the
%% member list and the others hold all the shards.
coordinator_node_leaves_under_load(Config) ->
    [A, B, C] = ?config(nodes, Config),
    Ids = ids_covering_all_shards(),
    [hi = gen_server:call({echo, B}, {I, hi}) || I <- Ids],
    await(fun() -> [shard_count(N, echo) || N <- [A, B, C]] =:= [10, 10, 10] end),
    Moved = hosted_echo_ids(A, Ids),
    Count = 4000,
    Self = self(),
    Streamer = spawn_link(fun() -> stream(Self, local, B, Ids, Count) end),
    ok = shardnode:stop_node(A),
    Got = collect_replies(Count, 10000),
    unlink(Streamer),
    exit(Streamer, kill),
    assert_once_in_order(Count, Got, Moved),
    await_members([B, C], [B, C]),
    ?assertEqual(?SHARDS, shard_count(B, echo) + shard_count(C, echo)),
    ok.

%% A killed member is only `unreachable': it keeps its shards (from here a
%% crash looks like a partition). Downed by hand, it leaves the cluster and
%% its shards are allocated to the others.
unreachable_member_is_downed_by_hand(Config) ->
    [A, B, C] = ?config(nodes, Config),
    ok = shardnode:kill_node(C),
    await(fun() -> member_status(A, C) =:= unreachable end),
    ?assertEqual(ok, gen_server:call({shardnode, A}, {down, C})),
    await(fun() -> member_status(A, C) =:= down andalso member_status(B, C) =:= down end),
    Ids = ids_covering_all_shards(),
    [?assert(is_integer(call(lists:nth(1 + I rem 2, [A, B]), I, get))) || I <- Ids],
    ?assertEqual(?SHARDS, shard_count(A) + shard_count(B)),
    ok.

%% keep_majority: C stops answering but keeps its connections. A and B find
%% it unreachable, down it, and after its lease has run out host its shards.
%% A call sent to C while it was paused is never answered when it wakes: it
%% learns it was downed and stops, and its entities never run again.
paused_member_is_downed_and_stays_silent(Config) ->
    [A, B, C] = ?config(nodes, Config),
    Ids = ids_covering_all_shards(),
    [0 = call(A, I, get) || I <- Ids],
    await(fun() -> [shard_count(N) || N <- [A, B, C]] =:= [10, 10, 10] end),
    [OnC | _] = [I || I <- Ids, hosts(C, I)],
    3 = call(A, OnC, {incr, 3}),
    pause(C),
    Self = self(),
    Late = spawn(fun() -> Self ! {late, catch gen_server:call({counter, C}, {OnC, {incr, 100}}, 60000)} end),
    await(fun() -> lists:member(member_status(A, C), [down, absent]) andalso
                       lists:member(member_status(B, C), [down, absent]) end),
    %% Once C's lease has run out its shards are allocated again, and its
    %% entities start afresh on A or B (nothing remembers them).
    await(fun() -> try_call(B, OnC, get) =:= {ok, 0} end),
    ?assertEqual(1, call(A, OnC, incr)),
    [_ = call(A, I, get) || I <- Ids],
    ?assertEqual(?SHARDS, shard_count(A) + shard_count(B)),
    resume(C),
    receive
        {late, {'EXIT', {Reason, _}}} -> ct:log("the late call to C ended with ~p", [Reason]);
        {late, {error, shutting_down}} -> ok;
        {late, Reply} -> ct:fail({downed_node_ran_an_entity, Reply})
    after 30000 -> ct:fail({late_call_never_ended, Late})
    end,
    await(fun() -> not lists:member(C, shardnode:which_nodes()) end),
    ?assertEqual(1, call(B, OnC, get)),
    await_members([A, B], [A, B]).

%% Both other members pause: C, alone, holds no quorum lease, so a message
%% to its entities waits instead of running, and it downs itself. When A and
%% B wake they find C gone, down it and take its shards.
minority_downs_itself(Config) ->
    [A, B, C] = ?config(nodes, Config),
    Ids = ids_covering_all_shards(),
    [0 = call(C, I, get) || I <- Ids],
    await(fun() -> [shard_count(N) || N <- [A, B, C]] =:= [10, 10, 10] end),
    [OnC | _] = [I || I <- Ids, hosts(C, I)],
    pause(A),
    pause(B),
    await(fun() -> lacks_quorum(C) end),
    Self = self(),
    spawn(fun() -> Self ! {held, catch gen_server:call({counter, C}, {OnC, incr}, 60000)} end),
    receive
        {held, {'EXIT', {Reason, _}}} -> ct:log("the call to C ended with ~p", [Reason]);
        %% What waited in the region is answered so as it stops.
        {held, {error, shutting_down}} -> ok;
        {held, Reply} -> ct:fail({minority_ran_an_entity, Reply})
    after 30000 -> ct:fail(minority_node_did_not_stop)
    end,
    await(fun() -> not lists:member(C, shardnode:which_nodes()) end),
    resume(A),
    resume(B),
    await_members([A, B], [A, B]),
    await(fun() -> try_call(A, OnC, get) =:= {ok, 0} end),
    [_ = call(B, I, get) || I <- Ids],
    ?assertEqual(?SHARDS, shard_count(A) + shard_count(B)).

%% A is cut off from B and C (paused). D joins through A: A lists it as
%% joining but does not admit it, for a side that could admit members could
%% grow itself a majority, and both sides would run entities. Once A hears
%% from the majority again, D is admitted.
cut_off_seed_admits_nobody(Config) ->
    [A, B, C] = ?config(nodes, Config),
    pause(B),
    pause(C),
    await(fun() -> lacks_quorum(A) end),
    {[D], _} = shardnode_ct:start_nodes(Config, [(case_opts(cut_off_seed_admits_nobody))#{join => [A]}]),
    await(fun() -> member_status(A, D) =:= joining end),
    ?assertEqual(timeout, shardnode_poll:until(fun() -> member_status(A, D) =/= joining end, 1500)),
    resume(B),
    resume(C),
    await_members([A, B, C, D], [A, B, C, D]),
    ok = shardnode:stop_node(D).

%% C, the newest member, crashes and is downed; a new C under the same name
%% joins through B, which is not the leader. It is a new incarnation: it is
%% admitted with a new up-number, every member lists it up, and it serves.
downed_node_rejoins_under_its_name(Config) ->
    [A, B, C] = ?config(nodes, Config),
    ok = shardnode:kill_node(C),
    await(fun() -> member_status(A, C) =:= down andalso member_status(B, C) =:= down end),
    {[C], _} = shardnode_ct:start_nodes(Config, [(opts())#{name => atom_to_list(C), join => [B]}]),
    await_members([A, B, C], [A, B, C]),
    Ids = ids_covering_all_shards(),
    [?assert(is_integer(call(C, I, get))) || I <- Ids],
    await(fun() -> [shard_count(N) || N <- [A, B, C]] =:= [10, 10, 10] end),
    ok = shardnode:stop_node(C).

%% A deployment starts its nodes at once: the first starts the cluster and
%% four join it in the same instant. Every node comes to list the same five
%% members, up, in the same order; every shard gets a home, spread evenly;
%% every entity answers through every node. Three rounds: the race this
%% guards against (a region that registered while its node was joining,
%% forgotten when the next joiner came) did not show every time.
five_nodes_started_at_once(Config) ->
    [started_at_once(Config, Round) || Round <- lists:seq(1, 3)],
    ok.

started_at_once(Config, Round) ->
    [First | _] = Names = [shardnode_ct:unique_name("c") ++ "@127.0.0.1" || _ <- lists:seq(1, 5)],
    Seed = list_to_atom(First),
    OptsList = [(opts())#{name => First} | [(opts())#{name => N, join => [Seed]} || N <- tl(Names)]],
    T0 = erlang:monotonic_time(millisecond),
    {Nodes, _} = shardnode_ct:start_nodes_at_once(Config, OptsList),
    await(fun() -> same_up_members(Nodes) end),
    Ids = ids_covering_all_shards(),
    await(fun() -> all_answer(Nodes, Ids) end),
    Serving = erlang:monotonic_time(millisecond) - T0,
    await(fun() -> balanced([shard_count(N) || N <- Nodes]) end),
    ct:log("round ~b: every entity answered through every node ~b ms after the start, "
           "shards balanced after ~b ms", [Round, Serving, erlang:monotonic_time(millisecond) - T0]),
    shardnode_ct:stop_nodes(Config, Nodes).

%% Nine members, each watched by one ring neighbour (watchers = 1; the
%% oldest, the seed, alone grants leases): a member keeps connections to
%% its seed, its ring neighbours and this controller, not to every member —
%% once formed, and after a kill -9, which every member used to tell every
%% member of (among 256 members a connection from each to each at once,
%% which starved the heartbeats until most members lost their leases). The
%% killed member is still downed everywhere and its shards served again.
a_crash_among_ring_watchers_connects_nobody_to_everyone(Config) ->
    N = 9,
    Names = [shardnode_ct:unique_name("r") ++ "@127.0.0.1" || _ <- lists:seq(1, N)],
    Seed = list_to_atom(hd(Names)),
    Ports = shardnode_ct:free_ports(N),
    Opts = fun(Name, Port) ->
                   #{config := C} = O = opts(),
                   %% nine processes launched at once on a loaded machine
                   O#{name => Name, ready_timeout => 30000,
                      config => C#{watchers => 1, metrics_port => Port}}
           end,
    OptsList = [Opts(hd(Names), hd(Ports)) |
                [(Opts(Name, Port))#{join => [Seed]} || {Name, Port} <- tl(lists:zip(Names, Ports))]],
    {Nodes, _} = shardnode_ct:start_nodes_at_once(Config, OptsList),
    await(fun() -> same_up_members(Nodes) end),
    Ids = ids_covering_all_shards(),
    await(fun() -> all_answer([Seed], Ids) end),
    Others = lists:zip(tl(Nodes), tl(Ports)),
    %% A member's connections: its seed (the grantor), the ring neighbour
    %% it watches, the one watching it and this node (which started it):
    %% 4. A member that was slow to answer for a moment (a loaded machine)
    %% is watched past for that moment, and the connection stays: a few
    %% more here and there. The mesh is 9 on every member, the other eight
    %% and this node.
    Before = [connections(Port) || {_, Port} <- Others],
    ct:log("connections of the members but the seed, once formed: ~w", [Before]),
    assert_no_mesh(Before, N),
    {Victim, _} = lists:last(Others),
    ok = shardnode:kill_node(Victim),
    Alive = Nodes -- [Victim],
    await(fun() -> lists:all(fun(X) -> member_status(X, Victim) =:= down end, Alive) end),
    %% Counted before any call goes through them: a call connects its
    %% node to the shard's home, as it should. Past the dead one, the ring
    %% neighbour after it: one more on the member that watched it.
    After = [connections(Port) || {Node, Port} <- Others, Node =/= Victim],
    ct:log("connections of the members but the seed, after the crash: ~w", [After]),
    assert_no_mesh(After, N - 1),
    await(fun() -> all_answer([Seed], Ids) end),
    shardnode_ct:stop_nodes(Config, Nodes).

%% No member is connected to all `Members' (the others and the test's
%% node), and on average a member keeps 5 at most: the mesh every member
%% fell into at the first change would be `Members' on each.
assert_no_mesh(Connections, Members) ->
    ?assert(lists:max(Connections) < Members, Connections),
    ?assert(lists:sum(Connections) =< 5 * length(Connections), Connections).

%% Distribution connections up on the node whose metrics_port is Port.
connections(Port) ->
    {ok, Page} = shardnode_ct:metrics_page(Port),
    shardnode_ct:metric_value(Page, <<"shardnode_dist_connections{state=\"up\"}">>).

%% Two of five members are killed and come back together, each through a
%% different seed: first at once (before anyone noticed them gone), then
%% after the others downed them. Each time every node comes to list all five
%% up, and every entity answers through every node, the restarted ones too.
two_members_killed_and_restarted_at_once(Config) ->
    [A, B, _] = Nodes3 = ?config(nodes, Config),
    {[D, E], _} = shardnode_ct:start_nodes(Config, [(opts())#{join => [A]}, (opts())#{join => [B]}]),
    Nodes = Nodes3 ++ [D, E],
    Ids = ids_covering_all_shards(),
    await(fun() -> same_up_members(Nodes) andalso all_answer(Nodes, Ids) end),
    Restart = fun() ->
                      shardnode_ct:start_nodes_at_once(
                        Config, [(opts())#{name => atom_to_list(D), join => [A]},
                                 (opts())#{name => atom_to_list(E), join => [B]}])
              end,
    ok = shardnode:kill_node(D),
    ok = shardnode:kill_node(E),
    {[D, E], _} = Restart(),
    await(fun() -> same_up_members(Nodes) andalso all_answer(Nodes, Ids) end),
    ok = shardnode:kill_node(D),
    ok = shardnode:kill_node(E),
    await(fun() -> member_status(A, D) =:= down andalso member_status(A, E) =:= down end),
    {[D, E], _} = Restart(),
    await(fun() -> same_up_members(Nodes) andalso all_answer(Nodes, Ids) end),
    shardnode_ct:stop_nodes(Config, [D, E]).

%% C is killed: each of A and B reports it unreachable, and each holds both
%% reports (the cluster-wide view). C is downed, and A's log says once that
%% it cannot reach C, however often it tried meanwhile.
crash_is_seen_cluster_wide_and_said_once(Config) ->
    [A, B, C] = ?config(nodes, Config),
    ?assertEqual({ok, []}, gen_server:call({shardnode, A}, reachability)),
    ok = shardnode:kill_node(C),
    Both = lists:sort([{A, [C]}, {B, [C]}]),
    await(fun() ->
                  [{ok, ViewA}, {ok, ViewB}] = [gen_server:call({shardnode, N}, reachability) || N <- [A, B]],
                  lists:sort(ViewA) =:= Both andalso lists:sort(ViewB) =:= Both
          end),
    await(fun() -> member_status(A, C) =:= down andalso member_status(B, C) =:= down end),
    {ok, Lines} = shardnode:output(A),
    Said = [L || L <- Lines, binary:match(L, <<"cannot reach ", (atom_to_binary(C))/binary>>) =/= nomatch],
    ?assertEqual(1, length(Said), Said).

%% A member is killed and downed; the last two are then stopped at once.
%% Neither waits for the other to take its shards (handoff_timeout_ms is
%% 60 s here): both exit cleanly within the stop's 10 s grace.
last_members_stopped_at_once_exit_promptly(Config) ->
    [A, B, C] = ?config(nodes, Config),
    [0 = call(A, I, get) || I <- ids_covering_all_shards()],
    ok = shardnode:kill_node(C),
    await(fun() -> member_status(A, C) =:= down andalso member_status(B, C) =:= down end),
    Self = self(),
    [spawn_link(fun() -> Self ! {stopped, N, shardnode:stop_node(N, 10000)} end) || N <- [A, B]],
    [receive {stopped, N, Result} -> ?assertEqual({N, ok}, {N, Result}) end || N <- [A, B]],
    ok.

%% Every entity of `Ids' answers through every node (stops at the first
%% that does not, after a second).
all_answer(Nodes, Ids) ->
    lists:all(fun(N) -> lists:all(fun(I) -> try_call(N, I, get) =/= error end, Ids) end, Nodes).

%% remember_entities: C crashes; once it is downed, its shards go to A and B
%% and the entities it ran there start again, with no message sent to them.
%% A passivated entity is not among them. A node that joins later and takes
%% shards over in a rebalance starts their entities too.
remembered_entities_restart_after_a_crash(Config) ->
    [A, B, C] = ?config(nodes, Config),
    Ids = ids_covering_all_shards() ++ [{extra, I} || I <- lists:seq(1, 60)],
    [1 = call(A, I, incr) || I <- Ids],
    await(fun() -> [shard_count(N) || N <- [A, B, C]] =:= [10, 10, 10] end),
    [Gone | _] = [I || I <- Ids, hosts(C, I)],
    ok = gen_server:call({counter, B}, {Gone, passivate}),
    Want = lists:sort(Ids -- [Gone]),
    await(fun() -> lists:sort(live_ids([A, B, C])) =:= Want end),
    ok = shardnode:kill_node(C),
    await(fun() -> member_status(A, C) =:= down end),
    await(fun() -> lists:sort(live_ids([A, B])) =:= Want end),
    ?assertEqual(?SHARDS, shard_count(A) + shard_count(B)),
    Opts = case_opts(remembered_entities_restart_after_a_crash),
    {[D], _} = shardnode_ct:start_nodes(Config, [Opts#{join => [A]}]),
    await(fun() -> lists:sort([shard_count(N) || N <- [A, B, D]]) =:= [10, 10, 10] end),
    await(fun() -> lists:sort(live_ids([A, B, D])) =:= Want end),
    ?assertNotEqual([], live_ids([D])),
    ok = shardnode:stop_node(D).

live_ids(Nodes) ->
    lists:append([lists:append(maps:values(State))
                  || N <- Nodes, {ok, State} <- [gen_server:call({counter, N}, get_shard_region_state)]]).

%% A fourth node joins while a client streams numbered tells to echo
%% entities: every reply arrives, none twice, in order per entity, and the
%% shards are then spread 7 or 8 per node.
fourth_node_joins_under_load(Config) ->
    [A | _] = Nodes = ?config(nodes, Config),
    Ids = ids_covering_all_shards(),
    [hi = gen_server:call({echo, lists:nth(1 + I rem 3, Nodes)}, {I, hi}) || I <- Ids],
    await(fun() -> [shard_count(N, echo) || N <- Nodes] =:= [10, 10, 10] end),
    Count = 4000,
    Self = self(),
    Streamer = spawn_link(fun() -> stream(Self, local, A, Ids, Count) end),
    {[D], _} = shardnode_ct:start_nodes(Config, [(opts())#{join => [A]}]),
    Got = collect_replies(Count, 10000),
    unlink(Streamer),
    exit(Streamer, kill),
    %% The shards that moved are those the new node ends up with.
    await(fun() -> balanced([shard_count(N, echo) || N <- Nodes ++ [D]]) end),
    assert_once_in_order(Count, Got, hosted_echo_ids(D, Ids)),
    ok = shardnode:stop_node(D).

%% Three BEAM peers, each sending through a different C node, stream
%% numbered tells to the same echo entities while a fourth C node joins and
%% shards move. Each peer gets every reply (from whichever node hosts the
%% entity, most of which it never connected to), once, in order.
beam_clients_on_every_node_during_a_join(Config) ->
    [A | _] = Nodes = ?config(nodes, Config),
    Ids = ids_covering_all_shards(),
    [hi = gen_server:call({echo, A}, {I, hi}) || I <- Ids],
    await(fun() -> [shard_count(N, echo) || N <- Nodes] =:= [10, 10, 10] end),
    {Mod, Bin, File} = code:get_object_code(?MODULE),
    Peers = [begin
                 {ok, Peer, PeerNode} = shardnode_ct:start_peer(Config, #{}),
                 {module, Mod} = erpc:call(PeerNode, code, load_binary, [Mod, File, Bin]),
                 {Peer, PeerNode}
             end || _ <- Nodes],
    Count = 2000,
    Self = self(),
    [spawn(PeerNode, ?MODULE, stream, [Self, Tag, N, Ids, Count])
     || {Tag, {{_, PeerNode}, N}} <- lists:enumerate(lists:zip(Peers, Nodes))],
    {[D], _} = shardnode_ct:start_nodes(Config, [(opts())#{join => [A]}]),
    Total = Count * length(Nodes),
    Got = collect_replies(Total, 15000),
    [ok = shardnode_ct:stop_peer(Peer) || {Peer, _} <- Peers],
    await(fun() -> balanced([shard_count(N, echo) || N <- Nodes ++ [D]]) end),
    assert_once_in_order(Total, Got, hosted_echo_ids(D, Ids)),
    ok = shardnode:stop_node(D).

%% Sends numbered tells, a few per millisecond, through Node (from a peer,
%% or from this node with Tag `local'), then passes the replies (which come
%% to the sender) on to Client.
stream(Client, Tag, Node, Ids, Count) ->
    N = length(Ids),
    [begin
         Id = lists:nth(1 + K rem N, Ids),
         erlang:send({echo, Node}, {Id, {seq, Tag, Id, K}}),
         K rem 40 =:= 0 andalso timer:sleep(1)
     end || K <- lists:seq(1, Count)],
    forward(Client).

%% The replies of stream/5, as {{Tag, Id}, Seq}, in arrival order; fails
%% if one is missing `Timeout' ms after the one before.
collect_replies(Count, Timeout) ->
    [receive {echo, Id, {seq, Tag, Id, S}} -> {{Tag, Id}, S}
     after Timeout -> ct:fail({missing_after, K})
     end || K <- lists:seq(1, Count)].

%% Every reply arrived once, and each home of an entity handled the
%% sender's messages in order.
%%
%% An entity whose shard did not move (its Id not in Moved) had one home, so
%% its replies, sent one after another over one connection, arrive in order.
%% An entity whose shard moved once had two: the old home handled the
%% sender's messages up to some point, in order, and the new home the rest,
%% in order; but the old home's last replies and the new home's first
%% travel over different connections, which the distribution does not
%% order against each other. So its replies are checked to be the
%% interleaving of at most two runs, each a contiguous range of the
%% sender's sequence numbers in order: what the shard promises, and no
%% more than the network can show.
assert_once_in_order(Count, Got, Moved) ->
    ?assertEqual(Count, length(lists:usort(Got))),
    PerSender = maps:groups_from_list(fun({Key, _}) -> Key end, fun({_, S}) -> S end, Got),
    [?assertEqual({Key, in_order},
                  {Key, in_order(Seqs, case lists:member(Id, Moved) of true -> 2; false -> 1 end)})
     || {{_Tag, Id} = Key, Seqs} <- maps:to_list(PerSender)],
    ok.

%% in_order when Seqs is an interleaving of at most Homes runs, each a
%% contiguous range of the numbers, in order. Taken in number order, the
%% arrival positions go down only where one run ends and the next begins.
in_order(Seqs, Homes) ->
    Pos = maps:from_list(lists:zip(Seqs, lists:seq(1, length(Seqs)))),
    Ps = [maps:get(S, Pos) || S <- lists:sort(Seqs)],
    Runs = 1 + length([x || {P, Q} <- lists:zip(lists:droplast(Ps), tl(Ps)), Q < P]),
    case Runs =< Homes of
        true -> in_order;
        false -> {runs, Runs, Seqs}
    end.

%% Ids of the given ones whose echo shard Node hosts.
hosted_echo_ids(Node, Ids) ->
    {ok, State} = gen_server:call({echo, Node}, get_shard_region_state),
    [I || I <- Ids, maps:is_key(erlang:phash2(I, ?SHARDS), State)].

%% All shards placed, most minus least per node at most 1.
balanced(Counts) ->
    lists:sum(Counts) =:= ?SHARDS andalso lists:max(Counts) - lists:min(Counts) =< 1.

forward(Client) ->
    receive Reply -> Client ! Reply, forward(Client) end.

%% With min_nr_of_members 2, a lone node allocates no shard: a call waits
%% (buffered) until a second member is up, then it is answered.
min_members_hold_allocation_back(Config) ->
    [A] = ?config(nodes, Config),
    ?assertExit({timeout, _}, gen_server:call({counter, A}, {early, incr}, 1000)),
    Self = self(),
    spawn_link(fun() -> Self ! {answer, catch gen_server:call({counter, A}, {waiting, incr}, 20000)} end),
    {[B], _} = shardnode_ct:start_nodes(Config, [(?config(opts, Config))#{join => [A]}]),
    receive {answer, Answer} -> ?assertEqual(1, Answer)
    after 20000 -> ct:fail(no_answer_after_second_member)
    end,
    %% the call that timed out was buffered, not lost: it ran too
    ?assertEqual(2, call(B, early, incr)),
    ok = shardnode:stop_node(B).

%% get_cluster_sharding_stats, asked of any member, reports every member's
%% region: each one's shards and entity counts, as its own
%% get_shard_region_state has them.
cluster_stats_cover_every_region(Config) ->
    Nodes = ?config(nodes, Config),
    Ids = [{stat, K} || K <- lists:seq(1, 200)] ++ ids_covering_all_shards(),
    [1 = call(lists:nth(1 + erlang:phash2(I, 3), Nodes), I, incr) || I <- Ids],
    Expected = maps:from_list(
                 [begin
                      {ok, State} = gen_server:call({counter, N}, get_shard_region_state),
                      {N, maps:map(fun(_, L) -> length(L) end, State)}
                  end || N <- Nodes]),
    [?assertEqual({ok, Expected}, gen_server:call({counter, N}, get_cluster_sharding_stats)) || N <- Nodes],
    Total = lists:sum([C || PerShard <- maps:values(Expected), C <- maps:values(PerShard)]),
    ?assertEqual(length(Ids), Total),
    ok.

%% graceful_shutdown of one region on a node that stays: `ok', its shards
%% are handed off to the other regions, then its name goes (monitors get
%% `normal'); the node's other types go on, and every entity answers
%% through any node.
graceful_shutdown_of_a_region_hands_off(Config) ->
    [A, B, C] = ?config(nodes, Config),
    Ids = ids_covering_all_shards(),
    [1 = call(A, I, incr) || I <- Ids],
    ?assertEqual(10, shard_count(B)),
    Mon = erlang:monitor(process, {counter, B}),
    ?assertEqual(ok, gen_server:call({counter, B}, graceful_shutdown)),
    receive {'DOWN', Mon, process, _, Reason} -> ?assertEqual(normal, Reason)
    after 10000 -> ct:fail(region_did_not_stop)
    end,
    ?assertEqual(?SHARDS, shard_count(A) + shard_count(C)),
    [?assert(is_integer(call(N, I, get))) || I <- Ids, N <- [A, C]],
    ?assertEqual(hi, gen_server:call({echo, B}, {x, hi})),
    ok.

%% A --proxy-only member routes every message to the shard's home but
%% hosts no shard and never coordinates.
proxy_only_node_routes_and_hosts_nothing(Config) ->
    [A, B, C] = ?config(nodes, Config),
    {[P], _} = shardnode_ct:start_nodes(Config, [(opts())#{join => [A], proxy_only => true}]),
    await_members([A, B, C, P], [A, B, C, P]),
    Ids = ids_covering_all_shards(),
    [?assertEqual(1, call(P, I, incr)) || I <- Ids],
    [?assertEqual(1, call(N, I, get)) || I <- Ids, N <- [A, B, C]],
    ?assertEqual(0, shard_count(P)),
    ?assertEqual(?SHARDS, lists:sum([shard_count(N) || N <- [A, B, C]])),
    {counter, P} ! {hd(Ids), incr},
    receive {counter, _, V} -> ?assertEqual(2, V) after 5000 -> ct:fail(no_tell_reply) end,
    ?assertEqual({ok, A}, gen_server:call({shardnode, P}, {coordinator, counter})),
    ok = shardnode:stop_node(P).

%% Every handoff waits for an ack from each proxy region. A proxy whose node
%% crashed is forgotten once the node is downed, so a rebalance afterwards
%% completes at once, not after handoff_timeout_ms (60 s here).
crashed_proxy_does_not_hold_up_handoffs(Config) ->
    [A, B, C] = ?config(nodes, Config),
    {[P], _} = shardnode_ct:start_nodes(Config, [(opts())#{join => [A], proxy_only => true}]),
    await_members([A, B, C, P], [A, B, C, P]),
    Ids = ids_covering_all_shards(),
    [?assertEqual(1, call(P, I, incr)) || I <- Ids],
    ok = shardnode:kill_node(P),
    await(fun() -> member_status(A, P) =:= down end),
    {[D], _} = shardnode_ct:start_nodes(Config, [(opts())#{join => [A]}]),
    await(fun() ->
                  Counts = [shard_count(N) || N <- [A, B, C, D]],
                  lists:sum(Counts) =:= ?SHARDS andalso lists:min(Counts) >= 7
          end),
    ok = shardnode:stop_node(D).

%% C crashes and is downed; D joins at once, while C's region still owns its
%% shards (until its lease has run out). Shards move to D without any
%% handoff waiting for an ack from C (handoff_timeout_ms is 60 s here), and
%% C's shards are allocated to the living.
rebalance_after_a_crash_does_not_wait_for_the_dead(Config) ->
    [A, B, C] = ?config(nodes, Config),
    Ids = ids_covering_all_shards(),
    [0 = call(A, I, get) || I <- Ids],
    await(fun() -> [shard_count(N) || N <- [A, B, C]] =:= [10, 10, 10] end),
    ok = shardnode:kill_node(C),
    await(fun() -> member_status(A, C) =:= down end),
    {[D], _} = shardnode_ct:start_nodes(Config, [(opts())#{join => [A]}]),
    await(fun() ->
                  [_ = try_call(A, I, get) || I <- Ids],
                  balanced([shard_count(N) || N <- [A, B, D]])
          end),
    ok = shardnode:stop_node(D).

%%====================================================================
%% Helpers
%%====================================================================

opts() ->
    #{config => #{number_of_shards => ?SHARDS, heartbeat_interval_ms => 200,
                  rebalance_interval_ms => 300, retry_interval_ms => 500, failure_timeout_ms => 1000,
                  stable_after_ms => 1000}}.

case_opts(unreachable_member_is_downed_by_hand) ->
    #{config := Config} = Opts = opts(),
    Opts#{config := Config#{downing => manual}};
%% Time enough for a node to join while A is cut off, before A downs itself.
case_opts(cut_off_seed_admits_nobody) ->
    #{config := Config} = Opts = opts(),
    Opts#{config := Config#{stable_after_ms => 6000}};
%% data_dir is left at its default, ./shardnode-data/NAME under the
%% directory common_test runs the nodes in: one per node.
case_opts(remembered_entities_restart_after_a_crash) ->
    #{config := Config} = Opts = opts(),
    Opts#{config := Config#{remember_entities => true}};
case_opts(_) ->
    opts().

hosts(Node, Id) ->
    {ok, State} = gen_server:call({counter, Node}, get_shard_region_state),
    maps:is_key(erlang:phash2(Id, ?SHARDS), State).

%% Whether the node's last word on its quorum lease is that it has none.
lacks_quorum(Node) ->
    {ok, Lines} = shardnode:output(Node),
    case [L || L <- Lines, binary:match(L, <<"quorum lease">>) =/= nomatch] of
        [] -> false;
        Said -> binary:match(lists:last(Said), <<"no quorum lease">>) =/= nomatch
    end.

%% A call that may find its shard's home paused or gone: {ok, Reply} or error.
try_call(Node, Id, Msg) ->
    try gen_server:call({counter, Node}, {Id, Msg}, 1000) of
        Reply -> {ok, Reply}
    catch
        exit:_ -> error
    end.

%% Integers whose shards, phash2(I, 30), cover all 30 shards.
ids_covering_all_shards() ->
    cover(0, #{}, []).

cover(_, Seen, Acc) when map_size(Seen) =:= ?SHARDS -> lists:reverse(Acc);
cover(I, Seen, Acc) ->
    S = erlang:phash2(I, ?SHARDS),
    case Seen of
        #{S := _} -> cover(I + 1, Seen, Acc);
        _ -> cover(I + 1, Seen#{S => true}, [I | Acc])
    end.

shard_count(Node) ->
    shard_count(Node, counter).

shard_count(Node, Type) ->
    {ok, State} = gen_server:call({Type, Node}, get_shard_region_state),
    maps:size(State).

%% Waits until every node in `At' lists exactly `Expected' as up members,
%% in that order.
await_members(At, Expected) ->
    await(fun() -> lists:all(fun(N) -> members(N) =:= Expected end, At) end).

