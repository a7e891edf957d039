%% The common_test suite a team writes for its own entity with shardnode's
%% kit (shardnode_ct): orders (examples/order.erl) on three C nodes from
%% one seed list, durable in LMDB with a replica of each shard, through a
%% rolling restart of every member and a kill -9 of one. Every payment
%% acknowledged is kept, none is applied twice, and no order ever runs on
%% two members at once. `make test' runs it from a project that depends on
%% shardnode (scripts/adoption-test.sh); in such a project it needs only
%% this file in test/ and order.erl in src/.
-module(order_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([orders_keep_every_payment_through_restarts_and_a_kill/1]).

suite() -> [{timetrap, {minutes, 5}}].

all() -> [orders_keep_every_payment_through_restarts_and_a_kill].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(shardnode),
    Config.

end_per_suite(_Config) ->
    shardnode_ct:assert_clean().                 % no C node left running

init_per_testcase(_Case, Config) ->
    ok = shardnode_ct:track_instances([order]),  % before the nodes start
    Config.

end_per_testcase(_Case, Config) ->
    shardnode_ct:stop_all_nodes(Config).

orders_keep_every_payment_through_restarts_and_a_kill(Config0) ->
    Opts = #{entities => #{order => order},      % hosted on this node
             config => #{state_store => lmdb, number_of_shards => 30,
                         %% a lost member noticed in about 2 s, not 10
                         heartbeat_interval_ms => 200, failure_timeout_ms => 1000,
                         stable_after_ms => 1000}},
    {[A, B, C] = Nodes, Config} = shardnode_ct:start_cluster(Config0, 3, Opts),
    Ids = [<<"o-", (integer_to_binary(I))/binary>> || I <- lists:seq(1, 30)],
    %% Through any member; a member gone a moment ago costs a retry, never
    %% a payment applied twice (only what was certainly not handled is
    %% sent again).
    Call = fun(Id, Msg) -> shardnode:call(Nodes, order, Id, Msg, #{timeout => 30000, attempt_timeout => 5000}) end,
    [ok = Call(Id, {create, 100}) || Id <- Ids],
    [ok = Call(Id, {pay, 30}) || Id <- Ids],

    %% A rolling restart, as an operator does it: each member in turn
    %% stopped (SIGTERM: its shards handed off), started again with its
    %% own options, and the cluster converged before the next.
    [begin
         ok = shardnode_ct:restart_node(Config, N),
         ok = shardnode_ct:await_converged(Nodes, 30000)
     end || N <- [C, B, A]],
    [?assertMatch(#{paid := 30}, Call(Id, status)) || Id <- Ids],
    [ok = Call(Id, {pay, 30}) || Id <- Ids],

    %% kill -9 of a member: its shards come back on the others from their
    %% replicas, every acknowledged payment with them.
    #{order := Moved} = shardnode_ct:kill_and_await_failover(B, 60000),
    ct:log("shards that were on ~ts: ~w", [B, Moved]),
    [{ok, _} = shardnode_ct:await_entity(A, order, Id, fun(#{paid := P}) -> P =:= 60 end, 10000) || Id <- Ids],
    [?assertEqual({error, overpaid}, Call(Id, {pay, 50})) || Id <- Ids],

    {ok, Incarnations} = shardnode_ct:assert_no_duplicate_instances([order]),
    ?assert(Incarnations >= length(Ids)),
    ok = shardnode_ct:assert_each_shard_once(A, order).
