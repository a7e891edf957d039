%% Entity state belongs to the entity, not to the node that hosts it
%% (docs/contract.md, "Entity state"): on every planned move of a shard —
%% a rebalance when a node joins, a member's `leave', SIGTERM, a region's
%% `graceful_shutdown' — each live entity's state goes with the shard, and
%% the entity continues on its new home where it was. With no store
%% configured, as here.
%%
%%   rebar3 ct --dir test --suite shardnode_state_SUITE
-module(shardnode_state_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-import(sn_test, [await/1, call/3]).

-import(shardnode_ct, [members/1]).

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([values_survive_a_rebalance/1,
         values_survive_a_leave/1,
         values_survive_sigterm/1,
         values_survive_graceful_shutdown/1,
         increments_never_go_back_while_nodes_join/1,
         a_large_shard_moves_in_chunks/1]).

-define(SHARDS, 30).

suite() -> [{timetrap, {minutes, 3}}].

all() ->
    [values_survive_a_rebalance,
     values_survive_a_leave,
     values_survive_sigterm,
     values_survive_graceful_shutdown,
     increments_never_go_back_while_nodes_join,
     a_large_shard_moves_in_chunks].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(shardnode),
    Config.

end_per_suite(_Config) ->
    ?assertEqual([], shardnode:which_nodes()),
    ok.

%% Three nodes: the first starts the cluster, the others join through it.
init_per_testcase(_Case, Config) ->
    {[A], Config1} = shardnode_ct:start_nodes(Config, [opts()]),
    {[B, C], Config2} = shardnode_ct:start_nodes(Config1, [(opts())#{join => [A]}, (opts())#{join => [A]}]),
    await_members([A, B, C], [A, B, C]),
    [{nodes, [A, B, C]} | Config2].

end_per_testcase(_Case, Config) ->
    shardnode_ct:stop_all_nodes(Config).

%%====================================================================
%% Cases
%%====================================================================

%% A fourth node joins and shards move to it: every counter and every kv
%% entry reads back as it was, through every node, and the moved shards
%% are really on the new node.
values_survive_a_rebalance(Config) ->
    [A | _] = Nodes = ?config(nodes, Config),
    Ids = fill(Nodes),
    {[D], _} = shardnode_ct:start_nodes(Config, [(opts())#{join => [A]}]),
    await(fun() -> balanced([shard_count(N) || N <- Nodes ++ [D]]) end),
    await(fun() -> balanced([shard_count(N, kv) || N <- Nodes ++ [D]]) end),
    ?assert(shard_count(D) > 0),
    ?assert(live_count(D, counter) > 0, "entities moved to the new node with their shards"),
    assert_values(Ids, Nodes ++ [D]),
    ok = shardnode:stop_node(D).

%% A member asked to `leave' hands its shards off with their states.
values_survive_a_leave(Config) ->
    [A, B, C] = ?config(nodes, Config),
    Ids = fill([A, B, C]),
    ?assert(live_count(B, counter) > 0),
    ?assertEqual(ok, gen_server:call({shardnode, B}, leave)),
    await_members([A, C], [A, C]),
    await(fun() -> shardnode_ct:gone(B) end),
    assert_values(Ids, [A, C]).

%% SIGTERM makes a node leave the same way.
values_survive_sigterm(Config) ->
    [A, B, C] = ?config(nodes, Config),
    Ids = fill([A, B, C]),
    ok = shardnode:stop_node(B),
    await_members([A, C], [A, C]),
    assert_values(Ids, [A, C]).

%% One region shuts down on a node that stays: its shards go, with their
%% states, to the other regions.
values_survive_graceful_shutdown(Config) ->
    [A, B, C] = ?config(nodes, Config),
    Ids = fill([A, B, C]),
    Mon = erlang:monitor(process, {counter, B}),
    ?assertEqual(ok, gen_server:call({counter, B}, graceful_shutdown)),
    receive {'DOWN', Mon, process, _, normal} -> ok
    after 10000 -> ct:fail(region_did_not_stop)
    end,
    ?assertEqual(?SHARDS, shard_count(A) + shard_count(C)),
    [?assertEqual(expected(I), call(N, I, get)) || I <- Ids, N <- [A, C]],
    ok.

%% Increments through every node, round after round, while a fourth and a
%% fifth node join and shards move twice: each call's answer is the
%% previous value plus one, so no value ever goes back and none is skipped.
increments_never_go_back_while_nodes_join(Config) ->
    [A | _] = Nodes = ?config(nodes, Config),
    Ids = ids_covering_all_shards(),
    Self = self(),
    Worker = spawn_link(fun() -> increment_rounds(Self, Nodes, Ids, 1) end),
    await_round(Worker, 3),
    {[D], _} = shardnode_ct:start_nodes(Config, [(opts())#{join => [A]}]),
    await(fun() -> balanced([shard_count(N) || N <- Nodes ++ [D]]) end),
    {[E], _} = shardnode_ct:start_nodes(Config, [(opts())#{join => [A]}]),
    await(fun() -> balanced([shard_count(N) || N <- Nodes ++ [D, E]]) end),
    Rounds = stop_rounds(Worker),
    ct:log("~b rounds of ~b increments while two nodes joined", [Rounds, length(Ids)]),
    ?assert(Rounds > 3),
    [?assertEqual(Rounds, call(N, I, get)) || I <- Ids, N <- Nodes ++ [D, E]],
    [ok = shardnode:stop_node(N) || N <- [D, E]],
    ok.

%% 20,000 counters in 30 shards (about 667 each, more than one 64 KiB
%% chunk for the largest kv entries): all of them keep their values when a
%% node joins, and a call made during the move is answered.
a_large_shard_moves_in_chunks(Config) ->
    [A | _] = Nodes = ?config(nodes, Config),
    Big = binary:copy(<<"x">>, 200),
    Ids = lists:seq(1, 20000),
    [ok = gen_server:call({kv, lists:nth(1 + I rem 3, Nodes)}, {I, {put, v, {I, Big}}}) || I <- Ids],
    {[D], _} = shardnode_ct:start_nodes(Config, [(opts())#{join => [A]}]),
    await(fun() -> balanced([shard_count(N, kv) || N <- Nodes ++ [D]]) end),
    ?assert(live_count(D, kv) > 1000),
    Wrong = [I || I <- Ids, gen_server:call({kv, lists:nth(1 + I rem 4, Nodes ++ [D])}, {I, {get, v}})
                                 =/= {ok, {I, Big}}],
    ?assertEqual([], Wrong),
    ok = shardnode:stop_node(D).

%%====================================================================
%% Helpers
%%====================================================================

%% Counter I is incremented expected(I) times and kv entity I holds
%% {I, expected(I)}, through all the nodes in turn. Returns the ids.
fill(Nodes) ->
    Ids = lists:seq(1, 300),
    [begin
         Via = lists:nth(1 + I rem length(Nodes), Nodes),
         [_ = call(Via, I, incr) || _ <- lists:seq(1, expected(I))],
         ok = gen_server:call({kv, Via}, {I, {put, value, {I, expected(I)}}})
     end || I <- Ids],
    assert_values(Ids, Nodes),
    Ids.

expected(I) -> 1 + I rem 7.

assert_values(Ids, Nodes) ->
    Wrong = [{N, I, Got}
             || N <- Nodes, I <- Ids,
                Got <- [{call(N, I, get), gen_server:call({kv, N}, {I, {get, value}})}],
                Got =/= {expected(I), {ok, {I, expected(I)}}}],
    ?assertEqual([], lists:sublist(Wrong, 10)),
    ok.

%% Rounds of one increment per id, each through the next node; every answer
%% must be the round's number. Reports each finished round to Client.
increment_rounds(Client, Nodes, Ids, Round) ->
    receive {stop, From} -> From ! {rounds, Round - 1}
    after 0 ->
        [begin
             Via = lists:nth(1 + (I + Round) rem length(Nodes), Nodes),
             case call(Via, I, incr) of
                 Round -> ok;
                 Other -> exit({went_wrong, I, Round, Other})
             end
         end || I <- Ids],
        Client ! {round, self(), Round},
        increment_rounds(Client, Nodes, Ids, Round + 1)
    end.

await_round(Worker, N) ->
    receive {round, Worker, R} when R >= N -> ok
    after 15000 -> ct:fail(no_rounds)
    end.

stop_rounds(Worker) ->
    Worker ! {stop, self()},
    receive {rounds, R} -> unlink(Worker), R
    after 30000 -> ct:fail(worker_did_not_stop)
    end.

opts() ->
    #{config => #{number_of_shards => ?SHARDS, heartbeat_interval_ms => 200,
                  rebalance_interval_ms => 300, retry_interval_ms => 500, failure_timeout_ms => 1000,
                  stable_after_ms => 1000}}.

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

live_count(Node, Type) ->
    {ok, State} = gen_server:call({Type, Node}, get_shard_region_state),
    length(lists:append(maps:values(State))).

balanced(Counts) ->
    lists:max(Counts) - lists:min(Counts) =< 1.


await_members(At, Expected) ->
    await(fun() -> lists:all(fun(N) -> members(N) =:= Expected end, At) end).

