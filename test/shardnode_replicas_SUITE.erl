%% Replicated state (docs/contract.md, "Replicated state"): with
%% `state_store = lmdb' and `state_replicas = 1' (the default), every
%% shard's records are committed on its home and on one replica on
%% another member before a change is acknowledged, so a member killed
%% with SIGKILL takes no acknowledged state with it: its shards continue
%% on their replicas, and when it comes back on its own data_dir its old
%% records are never served again.
%%
%%   rebar3 ct --dir test --suite shardnode_replicas_SUITE
-module(shardnode_replicas_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-import(sn_test, [await/1, await/2, call/3, start_incrementer/3, acked/1, stop_incrementer/1]).

-import(shardnode_ct, [members/1]).

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([kill_9_of_a_member_loses_no_acknowledged_value/1,
         kill_9_of_the_oldest_under_a_stream_loses_nothing/1,
         a_paused_member_is_replaced_and_its_late_writes_refused/1,
         a_whole_cluster_killed_restarts_in_another_order/1,
         members_leaving_and_joining_move_shards_to_their_replicas/1,
         calls_through_a_member_for_a_killed_home_are_all_answered/1]).

-define(SHARDS, 30).

suite() -> [{timetrap, {minutes, 3}}].

all() ->
    [kill_9_of_a_member_loses_no_acknowledged_value,
     kill_9_of_the_oldest_under_a_stream_loses_nothing,
     a_paused_member_is_replaced_and_its_late_writes_refused,
     a_whole_cluster_killed_restarts_in_another_order,
     members_leaving_and_joining_move_shards_to_their_replicas,
     calls_through_a_member_for_a_killed_home_are_all_answered].

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

%% The scenario that lost states without replicas: three members, 300
%% counters at 10 (every increment acknowledged), then SIGKILL of a member
%% that is not the oldest. Once its shards have moved, every counter
%% answers 10 from the two left; the member started again on its own
%% data_dir joins, takes shards again, and every counter still answers 10
%% (its old records are replaced, never served), and goes on to 11.
kill_9_of_a_member_loses_no_acknowledged_value(Config) ->
    [OA, OB, OC] = [opts(Config, shardnode_ct:unique_name("repl")) || _ <- [a, b, c]],
    {[A], _} = shardnode_ct:start_nodes(Config, [OA]),
    {[B, C], _} = shardnode_ct:start_nodes(Config, [OB#{join => [A]}, OC#{join => [A]}]),
    await_members([A, B, C], [A, B, C]),
    await(fun() -> balanced([shard_count(X) || X <- [A, B, C]]) end),
    Ids = lists:seq(1, 300),
    [[_ = call(lists:nth(1 + I rem 3, [A, B, C]), I, incr) || _ <- lists:seq(1, 10)] || I <- Ids],
    OnC = [I || I <- Ids, lists:member(erlang:phash2(I, ?SHARDS), hosted(C))],
    ct:log("~b of the counters live on ~s", [length(OnC), C]),
    ?assert(length(OnC) > 30),
    ok = shardnode:kill_node(C),
    await_members([A, B], [A, B]),
    await(fun() -> shard_count(A) + shard_count(B) =:= ?SHARDS end, 30000),
    ?assertEqual([], [{I, V} || I <- Ids, V <- [call(A, I, get)], V =/= 10]),
    {[C], _} = shardnode_ct:start_nodes(Config, [OC#{join => [A]}]),
    await_members([A, B, C], [A, B, C]),
    await(fun() -> balanced([shard_count(X) || X <- [A, B, C]]) end, 30000),
    ?assertEqual([], [{I, V} || I <- Ids, V <- [call(C, I, get)], V =/= 10]),
    ?assertEqual([], [{I, V} || I <- Ids, V <- [call(B, I, incr)], V =/= 11]),
    ok.

%% Four clients increment their own counters through B and C as fast as
%% they answer while A — the oldest member, where the coordinators run —
%% is killed with SIGKILL. Every counter then holds at least the last
%% value acknowledged to its client (at most one more: an increment
%% committed whose reply the kill cut off); none went back.
kill_9_of_the_oldest_under_a_stream_loses_nothing(Config) ->
    [OA, OB, OC] = [opts(Config, shardnode_ct:unique_name("repl")) || _ <- [a, b, c]],
    {[A], _} = shardnode_ct:start_nodes(Config, [OA]),
    {[B, C], _} = shardnode_ct:start_nodes(Config, [OB#{join => [A]}, OC#{join => [A]}]),
    await_members([A, B, C], [A, B, C]),
    await(fun() -> balanced([shard_count(X) || X <- [A, B, C]]) end),
    Clients = [start_incrementer(lists:nth(1 + K rem 2, [B, C]), [K * 1000 + J || J <- lists:seq(1, 40)], continue)
               || K <- lists:seq(1, 4)],
    await(fun() -> lists:all(fun(Cl) -> acked(Cl) > 200 end, Clients) end),
    ok = shardnode:kill_node(A),
    await_members([B, C], [B, C]),
    await(fun() -> shard_count(B) + shard_count(C) =:= ?SHARDS end, 30000),
    Before = [acked(Cl) || Cl <- Clients],
    await(fun() -> lists:all(fun({Cl, N}) -> acked(Cl) > N + 50 end, lists:zip(Clients, Before)) end, 30000),
    Acked = lists:foldl(fun(Cl, Acc) -> maps:merge(Acc, stop_incrementer(Cl)) end, #{}, Clients),
    Lost = [{Id, V, Got} || {Id, V} <- maps:to_list(Acked), Got <- [call(B, Id, get)], Got < V orelse Got > V + 1],
    ct:log("~b counters, ~b acknowledged increments", [maps:size(Acked), lists:sum(maps:values(Acked))]),
    ?assertEqual([], Lost),
    ok.

%% C is paused (SIGSTOP, its connections left open, as a hung machine)
%% under a stream of increments through A and B: the changes of shards
%% with a copy on C wait, then C is downed, and its shards continue on
%% their replicas, every acknowledged value kept. Woken (SIGCONT), C's
%% writes still on their way are refused by the members that replaced it,
%% and C learns it is down and exits; nothing it did after its downing is
%% seen anywhere.
a_paused_member_is_replaced_and_its_late_writes_refused(Config) ->
    [OA, OB, OC] = [with_metrics(opts(Config, shardnode_ct:unique_name("repl"))) || _ <- [a, b, c]],
    {[A], _} = shardnode_ct:start_nodes(Config, [OA]),
    {[B, C], _} = shardnode_ct:start_nodes(Config, [OB#{join => [A]}, OC#{join => [A]}]),
    await_members([A, B, C], [A, B, C]),
    await(fun() -> balanced([shard_count(X) || X <- [A, B, C]]) end),
    Clients = [start_incrementer(lists:nth(1 + K rem 2, [A, B]), [K * 1000 + J || J <- lists:seq(1, 40)], continue)
               || K <- lists:seq(1, 4)],
    await(fun() -> lists:all(fun(Cl) -> acked(Cl) > 200 end, Clients) end),
    %% A counter homed on C, at 5, its replica complete.
    OnC = hosted(C),
    [X | _] = [I || I <- lists:seq(100000, 101000), lists:member(erlang:phash2(I, ?SHARDS), OnC)],
    [_ = call(C, X, incr) || _ <- lists:seq(1, 5)],
    await(fun() -> replicas_missing(OA) =:= 0 end, 30000),
    {ok, OsPid} = shardnode:os_pid(C),
    "" = os:cmd("kill -STOP " ++ integer_to_list(OsPid)),
    await_members([A, B], [A, B]),
    await(fun() -> shard_count(A) + shard_count(B) =:= ?SHARDS end, 30000),
    Before = [acked(Cl) || Cl <- Clients],
    await(fun() -> lists:all(fun({Cl, N}) -> acked(Cl) > N + 50 end, lists:zip(Clients, Before)) end, 30000),
    ?assertEqual(5, call(A, X, get)),
    %% An increment of X waits in C's socket while C sleeps: woken, C may
    %% still take itself for X's home, but its write is refused by the
    %% replica that replaced it (or C, its lease gone, handles nothing):
    %% it never acknowledges 6, and X stays at 5.
    Self = self(),
    spawn_link(fun() -> Self ! {late, catch gen_server:call({counter, C}, {X, incr}, 20000)} end),
    "" = os:cmd("kill -CONT " ++ integer_to_list(OsPid)),
    Late = receive {late, R} -> R after 30000 -> ct:fail(late_call_unanswered) end,
    ct:log("the late increment on the replaced home: ~p", [Late]),
    ?assertNotEqual(6, Late),
    ?assertEqual(5, call(A, X, get)),
    await(fun() -> not lists:member(C, shardnode:which_nodes()) end, 30000),
    Acked = lists:foldl(fun(Cl, Acc) -> maps:merge(Acc, stop_incrementer(Cl)) end, #{}, Clients),
    Lost = [{Id, V, Got} || {Id, V} <- maps:to_list(Acked), Got <- [call(B, Id, get)], Got < V orelse Got > V + 1],
    ct:log("~b counters, ~b acknowledged increments", [maps:size(Acked), lists:sum(maps:values(Acked))]),
    ?assertEqual([], Lost),
    ok.

%% Three members, 300 counters at 1 to 7 and every shard with its
%% replica; then all three are killed with SIGKILL at once. Started again
%% on their data_dirs in the other order (C, the youngest, first and alone:
%% it coordinates; then B; then A), they answer every counter with its
%% value: a shard C kept a copy of continues at once, one whose last set
%% C was not in waits (never started empty, never from an older copy)
%% until a member of that set is back. Each member keeps, per shard, the
%% epoch and its part of the last set it heard of, in its LMDB.
a_whole_cluster_killed_restarts_in_another_order(Config) ->
    [OA, OB, OC] = [with_metrics(opts(Config, shardnode_ct:unique_name("repl"))) || _ <- [a, b, c]],
    {[A], _} = shardnode_ct:start_nodes(Config, [OA]),
    {[B, C], _} = shardnode_ct:start_nodes(Config, [OB#{join => [A]}, OC#{join => [A]}]),
    await_members([A, B, C], [A, B, C]),
    Ids = lists:seq(1, 300),
    [[_ = call(lists:nth(1 + I rem 3, [A, B, C]), I, incr) || _ <- lists:seq(1, expected(I))] || I <- Ids],
    await(fun() -> replicas_missing(OA) =:= 0 end, 30000),
    [ok = shardnode:kill_node(X) || X <- [A, B, C]],
    {[C], _} = shardnode_ct:start_nodes(Config, [OC#{join => []}]),
    %% C alone: its shards answer; the others wait, and what waits for
    %% them is answered {error, store_unavailable} after store_timeout_ms.
    Self = self(),
    [spawn_link(fun() -> Self ! {alone, I, catch call(C, I, get)} end) || I <- Ids],
    Alone = [receive {alone, I, R} -> {I, R} end || I <- Ids],
    Odd = [{I, R} || {I, R} <- Alone, R =/= expected(I), R =/= {error, store_unavailable}],
    ?assertEqual([], Odd),
    Waiting = [I || {I, {error, store_unavailable}} <- Alone],
    ct:log("C alone: ~b counters answered, ~b waited", [length(Ids) - length(Waiting), length(Waiting)]),
    ?assert(Waiting =/= [] andalso length(Waiting) < length(Ids)),
    ?assert(shards_waiting(OC) > 0),
    {[B], _} = shardnode_ct:start_nodes(Config, [OB#{join => [C]}]),
    {[A], _} = shardnode_ct:start_nodes(Config, [OA#{join => [C]}]),
    await_members([A, B, C], [C, B, A]),
    Wrong = [{I, V} || I <- Ids, V <- [call(C, I, get)], V =/= expected(I)],
    ?assertEqual([], Wrong),
    ?assertEqual([], [{I, V} || I <- Ids, V <- [call(A, I, incr)], V =/= expected(I) + 1]),
    ok.

%% Planned moves with replicas: a fourth member joins (shards move to it,
%% preferably those it already keeps a copy of), then one leaves with
%% SIGTERM (its shards go to members that keep copies: no state streamed
%% for those). Through all of it, increments go on, and every counter ends
%% with its value; and a kill -9 of one of the three left after that loses
%% nothing either.
members_leaving_and_joining_move_shards_to_their_replicas(Config) ->
    [OA, OB, OC, OD] = [with_metrics(opts(Config, shardnode_ct:unique_name("repl"))) || _ <- [a, b, c, d]],
    {[A], _} = shardnode_ct:start_nodes(Config, [OA]),
    {[B, C], _} = shardnode_ct:start_nodes(Config, [OB#{join => [A]}, OC#{join => [A]}]),
    await_members([A, B, C], [A, B, C]),
    Ids = lists:seq(1, 300),
    [[_ = call(lists:nth(1 + I rem 3, [A, B, C]), I, incr) || _ <- lists:seq(1, expected(I))] || I <- Ids],
    Clients = [start_incrementer(A, [K * 1000 + J || J <- lists:seq(1, 30)], continue) || K <- [1, 2]],
    {[D], _} = shardnode_ct:start_nodes(Config, [OD#{join => [A]}]),
    await(fun() -> balanced([shard_count(X) || X <- [A, B, C, D]]) andalso replicas_missing(OA) =:= 0 end, 30000),
    ok = shardnode:stop_node(C),
    await(fun() -> balanced([shard_count(X) || X <- [A, B, D]]) andalso replicas_missing(OA) =:= 0 end, 30000),
    ?assertEqual([], [{I, V} || I <- Ids, V <- [call(D, I, get)], V =/= expected(I)]),
    ok = shardnode:kill_node(D),
    await_members([A, B], [A, B]),
    await(fun() -> shard_count(A) + shard_count(B) =:= ?SHARDS end, 30000),
    Acked = lists:foldl(fun(Cl, Acc) -> maps:merge(Acc, stop_incrementer(Cl)) end, #{}, Clients),
    ?assertEqual([], [{I, V} || I <- Ids, V <- [call(A, I, get)], V =/= expected(I)]),
    Lost = [{Id, V, Got} || {Id, V} <- maps:to_list(Acked), Got <- [call(A, Id, get)], Got < V orelse Got > V + 1],
    ?assertEqual([], Lost),
    ok.

%% Nothing lost at the forwarder: C is killed with SIGKILL and at once
%% every counter it homed is read through A and B. A member that cannot
%% write a message to its shard's home (the connection is gone, the
%% attempt to open another fails, the peer is backed off) keeps it in the
%% shard's buffer until the shard has a home again: every call is answered
%% with the counter's value once the shards continue on their replicas
%% (failure_timeout_ms and stable_after_ms, 1 s each here: about 2 s),
%% none waits out its timeout (15 s, wide for a loaded machine). Three
%% rounds, C started again between them. Before the fix a third of the
%% calls of a round timed out: dropped with the failed connection attempt.
calls_through_a_member_for_a_killed_home_are_all_answered(Config) ->
    [OA, OB, OC] = [opts(Config, shardnode_ct:unique_name("fwd")) || _ <- [a, b, c]],
    {[A], _} = shardnode_ct:start_nodes(Config, [OA]),
    {[B, C], _} = shardnode_ct:start_nodes(Config, [OB#{join => [A]}, OC#{join => [A]}]),
    Ids = lists:seq(1, 150),
    [0 = call(A, I, get) || I <- Ids], % every shard gets a home
    Round =
        fun(N) ->
                await_members([A, B, C], [A, B, C]),
                await(fun() ->
                              Counts = [shard_count(X) || X <- [A, B, C]],
                              lists:sum(Counts) =:= ?SHARDS andalso balanced(Counts)
                      end, 30000),
                ShardsOfC = hosted(C),
                OnC = [I || I <- Ids, lists:member(erlang:phash2(I, ?SHARDS), ShardsOfC)],
                ?assert(length(OnC) > 10),
                %% Each counter of C's incremented once more, acknowledged.
                Acked = maps:from_list([{I, call(B, I, incr)} || I <- OnC]),
                ok = shardnode:kill_node(C),
                Self = self(),
                T0 = erlang:monotonic_time(millisecond),
                [spawn_link(fun() ->
                                    Via = lists:nth(1 + I rem 2, [A, B]),
                                    R = (catch gen_server:call({counter, Via}, {I, get}, 15000)),
                                    Self ! {got, I, R, erlang:monotonic_time(millisecond) - T0}
                            end) || I <- OnC],
                Got = [receive {got, I, R, Ms} -> {I, R, Ms} end || I <- OnC],
                Wrong = [{I, R} || {I, R, _} <- Got, R =/= maps:get(I, Acked)],
                ct:log("round ~b: ~b calls for ~s's counters, the last answered after ~b ms; wrong: ~p",
                       [N, length(OnC), C, lists:max([Ms || {_, _, Ms} <- Got]), Wrong]),
                ?assertEqual([], Wrong)
        end,
    Round(1),
    {[C], _} = shardnode_ct:start_nodes(Config, [OC#{join => [A]}]),
    Round(2),
    {[C], _} = shardnode_ct:start_nodes(Config, [OC#{join => [A]}]),
    Round(3),
    ok.

%%====================================================================
%% Helpers

expected(I) -> 1 + I rem 7.

shards_waiting(#{config := #{metrics_port := Port}}) ->
    {ok, Page} = shardnode_ct:metrics_page(Port),
    shardnode_ct:metric_value(Page, <<"shardnode_shards_waiting{type=\"counter\"}">>).

with_metrics(#{config := Config} = Opts) ->
    Opts#{config => Config#{metrics_port => shardnode_ct:free_port()}}.

%% On the node of Opts (the coordinators' node): the replicas the counter
%% shards lack.
replicas_missing(#{config := #{metrics_port := Port}}) ->
    case shardnode_ct:metrics_page(Port) of
        {ok, Page} -> shardnode_ct:metric_value(Page, <<"shardnode_shard_replicas_missing{type=\"counter\"}">>);
        {error, _} -> unknown
    end.
%%====================================================================

opts(Config, Name) ->
    Dir = filename:join(?config(priv_dir, Config), Name),
    #{name => Name ++ "@127.0.0.1",
      config => #{number_of_shards => ?SHARDS, heartbeat_interval_ms => 200,
                  rebalance_interval_ms => 300, retry_interval_ms => 500, failure_timeout_ms => 1000,
                  stable_after_ms => 1000, state_store => lmdb, data_dir => Dir}}.

hosted(Node) ->
    {ok, State} = gen_server:call({counter, Node}, get_shard_region_state),
    maps:keys(State).

shard_count(Node) ->
    {ok, State} = gen_server:call({counter, Node}, get_shard_region_state),
    maps:size(State).

balanced(Counts) ->
    lists:max(Counts) - lists:min(Counts) =< 1.

await_members(At, Expected) ->
    await(fun() -> lists:all(fun(X) -> members(X) =:= Expected end, At) end, 30000).
