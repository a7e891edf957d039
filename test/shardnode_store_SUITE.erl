%% Entity states in a durable store, `state_store = lmdb' (docs/contract.md,
%% "Entity state"): a node restarted on the same data_dir continues every
%% entity where it was; kill -9 in the middle of a stream of increments
%% loses none that was acknowledged; passivate unloads and the next message
%% reloads; `delete' removes the stored state; a cluster whose shards move
%% keeps the states on their new homes' stores too.
%%
%%   rebar3 ct --dir test --suite shardnode_store_SUITE
-module(shardnode_store_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-import(sn_test, [await/1, call/3, start_incrementer/3, acked/1, stop_incrementer/1]).

-import(shardnode_ct, [members/1]).

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([a_restart_continues_every_entity/1,
         kill_9_loses_no_acknowledged_increment/1,
         passivate_unloads_and_the_next_message_reloads/1,
         delete_removes_the_stored_state/1,
         types_without_state_work_with_a_store/1,
         moved_states_are_stored_on_their_new_home/1,
         passivated_entities_move_with_their_shard/1,
         a_full_disk_fails_changes_and_loses_nothing/1,
         max_active_entities_keeps_the_most_recent_live_and_every_state/1]).

-define(SHARDS, 30).

suite() -> [{timetrap, {minutes, 3}}].

all() ->
    [a_restart_continues_every_entity,
     kill_9_loses_no_acknowledged_increment,
     passivate_unloads_and_the_next_message_reloads,
     delete_removes_the_stored_state,
     types_without_state_work_with_a_store,
     moved_states_are_stored_on_their_new_home,
     passivated_entities_move_with_their_shard,
     a_full_disk_fails_changes_and_loses_nothing,
     max_active_entities_keeps_the_most_recent_live_and_every_state].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(shardnode),
    Config.

end_per_suite(_Config) ->
    ?assertEqual([], shardnode:which_nodes()),
    ok.

init_per_testcase(_Case, Config) ->
    Config.

end_per_testcase(_Case, Config) ->
    shardnode_ct:stop_all_nodes(Config).

%%====================================================================
%% Cases
%%====================================================================

%% 1,000 counters and 1,000 kv entities, then SIGTERM; the node started
%% again under the same name on the same data_dir answers every one with
%% its value, and goes on from there.
a_restart_continues_every_entity(Config) ->
    Name = shardnode_ct:unique_name("store"),
    Opts = opts(Config, Name),
    {[N], _} = shardnode_ct:start_nodes(Config, [Opts]),
    Ids = lists:seq(1, 1000),
    [begin
         [_ = call(N, I, incr) || _ <- lists:seq(1, expected(I))],
         ok = gen_server:call({kv, N}, {I, {put, value, {I, <<"v">>}}})
     end || I <- Ids],
    ok = shardnode:stop_node(N),
    {[N], _} = shardnode_ct:start_nodes(Config, [Opts]),
    Wrong = [I || I <- Ids, {call(N, I, get), gen_server:call({kv, N}, {I, {get, value}})}
                              =/= {expected(I), {ok, {I, <<"v">>}}}],
    ?assertEqual([], Wrong),
    ?assertEqual(expected(7) + 1, call(N, 7, incr)),
    ok = shardnode:stop_node(N).

%% Four client processes increment their own counters as fast as the node
%% answers, each remembering the last value acknowledged per counter; the
%% node is killed with SIGKILL meanwhile. Restarted on its data_dir, every
%% counter holds at least its last acknowledged value — at most one more,
%% an increment committed whose reply the kill cut off.
kill_9_loses_no_acknowledged_increment(Config) ->
    Name = shardnode_ct:unique_name("store"),
    Opts = opts(Config, Name),
    {[N], _} = shardnode_ct:start_nodes(Config, [Opts]),
    Clients = [start_incrementer(N, [C * 1000 + K || K <- lists:seq(1, 50)], stop) || C <- lists:seq(1, 4)],
    await(fun() -> lists:all(fun(C) -> acked(C) > 1000 end, Clients) end),
    ok = shardnode:kill_node(N),
    %% Each client has counters of its own.
    Acked = lists:foldl(fun(C, Acc) -> maps:merge(Acc, stop_incrementer(C)) end, #{}, Clients),
    ?assert(maps:size(Acked) >= 150),
    {[N], _} = shardnode_ct:start_nodes(Config, [Opts]),
    Lost = [{Id, V, Got} || {Id, V} <- maps:to_list(Acked), Got <- [call(N, Id, get)], Got < V orelse Got > V + 1],
    ct:log("~b counters, ~b acknowledged increments before the kill",
           [maps:size(Acked), lists:sum(maps:values(Acked))]),
    ?assertEqual([], Lost),
    ok = shardnode:stop_node(N).

passivate_unloads_and_the_next_message_reloads(Config) ->
    {[N], _} = shardnode_ct:start_nodes(Config, [opts(Config, shardnode_ct:unique_name("store"))]),
    [_ = call(N, 42, incr) || _ <- lists:seq(1, 5)],
    ?assertEqual(ok, call(N, 42, passivate)),
    await(fun() -> not lists:member(42, live(N, counter)) end),
    ?assertEqual(5, call(N, 42, get)),
    ?assert(lists:member(42, live(N, counter))),
    %% At once after a change, too: the load waits for the commit.
    [?assertEqual(5 + K, begin
                             V = call(N, 42, incr),
                             ok = call(N, 42, passivate),
                             V
                         end) || K <- lists:seq(1, 20)],
    ?assertEqual(25, call(N, 42, get)),
    ok = shardnode:stop_node(N).

%% docs/contract.md "Entity state": max_active_entities = 100 (by recency
%% alone) and 1,000 counters, each incremented to its own value: never
%% more than 100 live (the least recently used passivated, as the metrics
%% count), and every value is there when asked again, read back from the
%% store. The 100 used last are the ones live. Without a store, an entity
%% passivated for the limit starts afresh, as after any passivation.
max_active_entities_keeps_the_most_recent_live_and_every_state(Config) ->
    Port = shardnode_ct:free_port(),
    #{config := C} = Opts = opts(Config, shardnode_ct:unique_name("store")),
    {[N], _} = shardnode_ct:start_nodes(Config, [Opts#{config := C#{max_active_entities => 100,
                                                                   max_active_by_frequency => false,
                                                                   metrics_port => Port}}]),
    Ids = lists:seq(1, 1000),
    [begin
         [_ = call(N, I, incr) || _ <- lists:seq(1, expected(I))],
         ?assert(length(live(N, counter)) =< 100)
     end || I <- Ids],
    ?assertEqual(lists:seq(901, 1000), lists:sort(live(N, counter))),
    ?assertEqual([], [I || I <- Ids, call(N, I, get) =/= expected(I)]),
    ?assertEqual(lists:seq(901, 1000), lists:sort(live(N, counter))),
    {ok, Page} = shardnode_ct:metrics_page(Port),
    Passivated = shardnode_ct:metric_value(Page, <<"shardnode_limit_passivations_total{type=\"counter\"}">>),
    Loads = shardnode_ct:metric_value(Page, <<"shardnode_store_loads_total{type=\"counter\"}">>),
    ct:log("~b passivated for the limit, ~b loads", [Passivated, Loads]),
    ?assertEqual(1900, Passivated),
    ?assertEqual(2000, Loads),
    ok = shardnode:stop_node(N),
    %% in memory
    {[M], _} = shardnode_ct:start_nodes(Config, [#{config => #{max_active_entities => 3}}]),
    [1, 1, 1, 2] = [call(M, I, incr) || I <- [a, b, c, c]],
    1 = call(M, d, incr),
    ?assertEqual([b, c, d], lists:sort(live(M, counter))),
    1 = call(M, a, incr),
    ?assertEqual([a, c, d], lists:sort(live(M, counter))).

delete_removes_the_stored_state(Config) ->
    Name = shardnode_ct:unique_name("store"),
    Opts = opts(Config, Name),
    {[N], _} = shardnode_ct:start_nodes(Config, [Opts]),
    3 = call(N, 1, {incr, 3}),
    ok = gen_server:call({kv, N}, {1, {put, a, 1}}),
    ?assertEqual(ok, call(N, 1, delete)),
    ?assertEqual(ok, gen_server:call({kv, N}, {1, delete})),
    ?assertEqual(0, call(N, 1, get)),
    ?assertEqual({error, not_found}, gen_server:call({kv, N}, {1, {get, a}})),
    9 = call(N, 2, {incr, 9}),
    ?assertEqual(ok, call(N, 2, delete)),
    %% An entity passivated a while ago deleted, and asked at once (before
    %% the deletion is committed): its load waits for it, and finds nothing.
    [begin
         5 = call(N, I, {incr, 5}),
         ok = call(N, I, passivate),
         %% other changes, committed, so that its passivation is old news
         [_ = call(N, 999, incr) || _ <- [1, 2, 3]],
         Delete = gen_server:send_request({counter, N}, {I, delete}),
         ?assertEqual({I, 0}, {I, call(N, I, get)}),
         ?assertEqual({reply, ok}, gen_server:wait_response(Delete, 5000))
     end || I <- lists:seq(100, 130)],
    ok = shardnode:stop_node(N),
    {[N], _} = shardnode_ct:start_nodes(Config, [Opts]),
    ?assertEqual(0, call(N, 2, get)),
    ok = shardnode:stop_node(N).

%% echo keeps no state: it answers as ever, and `delete' just stops it.
types_without_state_work_with_a_store(Config) ->
    {[N], _} = shardnode_ct:start_nodes(Config, [opts(Config, shardnode_ct:unique_name("store"))]),
    ?assertEqual(hi, gen_server:call({echo, N}, {1, hi})),
    ?assertEqual(ok, gen_server:call({echo, N}, {1, delete})),
    ?assertEqual(again, gen_server:call({echo, N}, {1, again})),
    ok = shardnode:stop_node(N).

%% Three members with lmdb; a fourth joins and takes shards, states and
%% all, written to its store as they come (not started). Killed, then
%% started again on its data_dir as a cluster of its own, it still has the
%% states it was sent: they were committed before it acknowledged them.
moved_states_are_stored_on_their_new_home(Config) ->
    Names = [shardnode_ct:unique_name("store") || _ <- lists:seq(1, 4)],
    [OA, OB, OC, OD] = [opts(Config, Nm) || Nm <- Names],
    {[A], _} = shardnode_ct:start_nodes(Config, [OA]),
    {[B, C], _} = shardnode_ct:start_nodes(Config, [OB#{join => [A]}, OC#{join => [A]}]),
    await_members([A, B, C], [A, B, C]),
    Ids = lists:seq(1, 300),
    [[_ = call(lists:nth(1 + I rem 3, [A, B, C]), I, incr) || _ <- lists:seq(1, expected(I))] || I <- Ids],
    {[D], _} = shardnode_ct:start_nodes(Config, [OD#{join => [A]}]),
    await(fun() -> balanced([shard_count(X) || X <- [A, B, C, D]]) end),
    %% The moved states are in D's store, their entities not started:
    %% they load on their first message.
    OnD = [I || I <- Ids, lists:member(erlang:phash2(I, ?SHARDS), hosted(D))],
    ?assert(length(OnD) > 30),
    ?assertEqual([], live(D, counter)),
    [?assertEqual(expected(I), call(A, I, get)) || I <- Ids],
    ok = shardnode:kill_node(D),
    %% The others go first, so that nothing of the old cluster reaches it.
    [ok = shardnode:kill_node(X) || X <- [A, B, C]],
    {[D], _} = shardnode_ct:start_nodes(Config, [OD]),
    Wrong = [{I, Got} || I <- OnD, Got <- [call(D, I, get)], Got =/= expected(I)],
    ?assertEqual([], Wrong),
    ok.

%% With a store a shard's move carries every stored state, not only the
%% live entities': counters passivated on A keep their values when their
%% shards move to B. And what a node stored of a shard it hosted before is
%% replaced when the shard comes back: B changes and deletes some, then
%% leaves; A, which still holds the old records, answers the new values
%% and 0 for the deleted.
passivated_entities_move_with_their_shard(Config) ->
    [OA, OB] = [opts(Config, shardnode_ct:unique_name("store")) || _ <- [a, b]],
    {[A], _} = shardnode_ct:start_nodes(Config, [OA]),
    Ids = lists:seq(1, 200),
    [[_ = call(A, I, incr) || _ <- lists:seq(1, expected(I))] || I <- Ids],
    [ok = call(A, I, passivate) || I <- Ids],
    await(fun() -> live(A, counter) =:= [] end),
    {[B], _} = shardnode_ct:start_nodes(Config, [OB#{join => [A]}]),
    await(fun() -> balanced([shard_count(X) || X <- [A, B]]) end),
    OnB = [I || I <- Ids, lists:member(erlang:phash2(I, ?SHARDS), hosted(B))],
    ?assert(length(OnB) > 20),
    ?assertEqual([], [{I, V} || I <- Ids, V <- [call(B, I, get)], V =/= expected(I)]),
    %% On B: half of its counters go on by 10, the rest are deleted.
    {Changed, Deleted} = lists:partition(fun(I) -> I rem 2 =:= 0 end, OnB),
    [?assertEqual(expected(I) + 10, call(B, I, {incr, 10})) || I <- Changed],
    [ok = call(B, I, delete) || I <- Deleted],
    ok = shardnode:stop_node(B),
    await(fun() -> shard_count(A) =:= ?SHARDS end),
    Want = fun(I) ->
                   case {lists:member(I, Changed), lists:member(I, Deleted)} of
                       {true, _} -> expected(I) + 10;
                       {_, true} -> 0;
                       _ -> expected(I)
                   end
           end,
    ?assertEqual([], [{I, V, Want(I)} || I <- Ids, V <- [call(A, I, get)], V =/= Want(I)]),
    ok = shardnode:stop_node(A).

%% A real fault: data_dir on a 4 MB tmpfs that 100 KB kv values fill.
%% Once a commit fails for want of space, its call gets {error,
%% store_unavailable} and its change is not applied; every value
%% acknowledged before is still read back. Given room again (the tmpfs
%% remounted larger), the store takes changes again by itself, and a
%% restart finds all that was acknowledged. Skipped where tmpfs cannot be
%% mounted (not root).
a_full_disk_fails_changes_and_loses_nothing(Config) ->
    Dir = filename:join(?config(priv_dir, Config), "full_disk"),
    ok = filelib:ensure_path(Dir),
    case sh("mount -t tmpfs -o size=4m tmpfs " ++ Dir) of
        {0, _} -> full_disk(Config, Dir);
        {_, Why} -> {skip, "cannot mount a tmpfs here: " ++ Why}
    end.

full_disk(Config, Dir) ->
    Name = shardnode_ct:unique_name("store"),
    Opts0 = opts(Config, Name),
    Opts = Opts0#{config => (maps:get(config, Opts0))#{data_dir => Dir}},
    try
        {[N], _} = shardnode_ct:start_nodes(Config, [Opts]),
        Ids = lists:seq(1, 100),
        [[_ = call(N, I, incr) || _ <- lists:seq(1, expected(I))] || I <- Ids],
        Big = binary:copy(<<"x">>, 100000),
        %% The first put the store cannot commit, and those before it.
        {Stored, Failed} = fill(N, Big, 1),
        ct:log("~b values of 100 KB stored, then put ~b failed", [length(Stored), Failed]),
        ?assert(length(Stored) >= 10),
        ?assertEqual({error, not_found}, gen_server:call({kv, N}, {Failed, {get, v}})),
        ?assertEqual([], [I || I <- Ids, call(N, I, get) =/= expected(I)]),
        ?assertEqual([], [K || K <- Stored, gen_server:call({kv, N}, {K, {get, v}}) =/= {ok, Big}]),
        {0, _} = sh("mount -o remount,size=64m " ++ Dir),
        ?assertEqual(ok, gen_server:call({kv, N}, {Failed, {put, v, Big}})),
        ?assertEqual(expected(1) + 1, call(N, 1, incr)),
        ok = shardnode:stop_node(N),
        {[N], _} = shardnode_ct:start_nodes(Config, [Opts]),
        ?assertEqual(expected(1) + 1, call(N, 1, get)),
        ?assertEqual([], [I || I <- tl(Ids), call(N, I, get) =/= expected(I)]),
        ?assertEqual([], [K || K <- [Failed | Stored], gen_server:call({kv, N}, {K, {get, v}}) =/= {ok, Big}]),
        ok = shardnode:stop_node(N)
    after
        [shardnode:kill_node(X) || X <- shardnode:which_nodes()],
        sh("umount " ++ Dir ++ " || umount -l " ++ Dir)
    end.

%% Puts Big under key v of kv entities 1, 2, ... until a put is refused.
fill(N, Big, K) when K =< 200 ->
    case gen_server:call({kv, N}, {K, {put, v, Big}}, 10000) of
        ok ->
            {Stored, Failed} = fill(N, Big, K + 1),
            {[K | Stored], Failed};
        {error, store_unavailable} ->
            {[], K}
    end.

sh(Cmd) ->
    Out = os:cmd(Cmd ++ " 2>&1; echo \"rc=$?\""),
    [Rc | Rest] = lists:reverse(string:lexemes(Out, "\n")),
    {list_to_integer(string:prefix(Rc, "rc=")), string:join(lists:reverse(Rest), "\n")}.

%%====================================================================
%% Helpers
%%====================================================================

expected(I) -> 1 + I rem 7.

opts(Config, Name) ->
    Dir = filename:join(?config(priv_dir, Config), Name),
    #{name => Name ++ "@127.0.0.1",
      config => #{number_of_shards => ?SHARDS, heartbeat_interval_ms => 200,
                  rebalance_interval_ms => 300, retry_interval_ms => 500, failure_timeout_ms => 1000,
                  stable_after_ms => 1000, state_store => lmdb, data_dir => Dir}}.

%% Increments its counters round robin; each acknowledged value is kept.
%% Answers {acked, Count} and, once the node is gone, {final, Map}.
live(Node, Type) ->
    {ok, State} = gen_server:call({Type, Node}, get_shard_region_state),
    lists:append(maps:values(State)).

hosted(Node) ->
    {ok, State} = gen_server:call({counter, Node}, get_shard_region_state),
    maps:keys(State).

shard_count(Node) ->
    {ok, State} = gen_server:call({counter, Node}, get_shard_region_state),
    maps:size(State).

balanced(Counts) ->
    lists:max(Counts) - lists:min(Counts) =< 1.


await_members(At, Expected) ->
    await(fun() -> lists:all(fun(X) -> members(X) =:= Expected end, At) end).

