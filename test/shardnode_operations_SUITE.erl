%% Everyday operations keep every guarantee (docs/contract.md, "Everyday
%% operations"): restarts, supervisors and upgrades are what a cluster
%% meets every day, and none of them may cost an acknowledged write or
%% leave a caller without an answer.
%%
%% Each group is one operation, its cases self-contained (their own nodes,
%% started and stopped in the case).
%%
%%   rebar3 ct --dir test --suite shardnode_operations_SUITE
%%   rebar3 ct --dir test --suite shardnode_operations_SUITE --group rolling_restart
-module(shardnode_operations_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-import(sn_test, [await/2, start_incrementer/4, acked/1, stop_incrementer/1]).

-export([all/0, groups/0, suite/0, init_per_suite/1, end_per_suite/1,
         init_per_group/2, end_per_group/2, init_per_testcase/2, end_per_testcase/2]).
-export([a_rolling_restart_loses_no_acknowledged_write/1]).

suite() -> [{timetrap, {minutes, 5}}].

all() ->
    [{group, rolling_restart}].

groups() ->
    [{rolling_restart, [], [a_rolling_restart_loses_no_acknowledged_write]}].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(shardnode),
    Config.

end_per_suite(_Config) ->
    ?assertEqual([], shardnode:which_nodes()),
    ok.

init_per_group(_Group, Config) ->
    Config.

end_per_group(_Group, _Config) ->
    ok.

init_per_testcase(_Case, Config) ->
    Config.

end_per_testcase(_Case, Config) ->
    shardnode_ct:stop_all_nodes(Config),
    %% No entity process outlives its C node.
    sn_test:await(fun() -> shardnode_entity_host:dispatchers() =:= [] end),
    case whereis(sn_instances) of
        undefined -> ok;
        Recorder -> exit(Recorder, kill), ok
    end.

%%====================================================================
%% rolling_restart
%%====================================================================

-define(ROLL_SHARDS, 100).
-define(ROLL_ROUNDS, 7).
-define(ROLL_TYPES, [tally, counter]).

%% A rolling restart under traffic, as a deployment rolls its members: three
%% members on lmdb with one replica per shard, hosting a type written in
%% Erlang (sn_tally, its processes on this node) and a C type (counter);
%% each member in turn is stopped with SIGTERM, awaited gone, started again
%% with its options on its data_dir, and awaited until every member lists
%% it up and they agree on the coordinators — seven rounds, 21 restarts.
%% The next stop follows at once: its shards drain to the member just
%% back while that one still asks where the shards it is sent for live,
%% and when the oldest stops, the coordinators move meanwhile. Clients
%% increment their entities through every member: no acknowledged value
%% ever goes back, no entity ever runs twice, every entity ends at least
%% at its last acknowledged value, and every member answers every entity.
a_rolling_restart_loses_no_acknowledged_write(Config) ->
    Recorder = sn_test:start_instance_recorder(),
    Dir = ?config(priv_dir, Config),
    Names = [shardnode_ct:unique_name("roll") || _ <- [a, b, c]],
    Nodes = [list_to_atom(Nm ++ "@127.0.0.1") || Nm <- Names],
    Opts = maps:from_list([{N, roll_opts(Dir, Nm, Nodes -- [N])} || {N, Nm} <- lists:zip(Nodes, Names)]),
    [A, B, C] = Nodes,
    {[A], _} = shardnode_ct:start_nodes(Config, [(maps:get(A, Opts))#{join => []}]),
    {[B, C], _} = shardnode_ct:start_nodes(Config, [maps:get(B, Opts), maps:get(C, Opts)]),
    await_members(Nodes),
    %% Every shard gets a home (a shard is allocated at its first message),
    %% so "spread" below means every shard.
    [0 = gen_server:call({T, A}, {Id, get}, 10000) || T <- ?ROLL_TYPES, Id <- one_id_per_shard()],
    await_converged(Nodes),
    Clients = [start_incrementer(Nodes, T, [{T, K, J} || J <- lists:seq(1, 60)], continue)
               || T <- ?ROLL_TYPES, K <- [1, 2]],
    await(fun() -> lists:all(fun(Cl) -> acked(Cl) > 50 end, Clients) end, 30000),
    Restarts = [restart_under_traffic(Config, N, maps:get(N, Opts), Nodes, Clients)
                || _ <- lists:seq(1, ?ROLL_ROUNDS), N <- Nodes],
    ct:log("~b restarts, each from SIGTERM to converged (ms): ~w", [length(Restarts), Restarts]),
    Acked = lists:foldl(fun(Cl, Acc) -> maps:merge(Acc, stop_incrementer(Cl)) end, #{}, Clients),
    ct:log("~b entities, ~b acknowledged increments", [maps:size(Acked), lists:sum(maps:values(Acked))]),
    %% Every member answers every entity, with at least its last
    %% acknowledged value (a call whose answer was lost in a stop may
    %% have applied more).
    Wrong = [{Id, N, V, Got} || {{T, _, _} = Id, V} <- maps:to_list(Acked), N <- Nodes,
                                Got <- [catch gen_server:call({T, N}, {Id, get}, 10000)],
                                not (is_integer(Got) andalso Got >= V)],
    ?assertEqual([], Wrong),
    ?assertEqual([], sn_test:second_instances(Recorder)),
    ok.

%% Stops Node with SIGTERM (shardnode:stop_node/1 returns once it is gone:
%% its shards have moved), waits until the others list only each other,
%% starts it again with Opts and waits until the members agree again and
%% each client has had more increments acknowledged. Returns how long that
%% took, in ms.
restart_under_traffic(Config, Node, Opts, Nodes, Clients) ->
    T0 = erlang:monotonic_time(millisecond),
    Before = [acked(Cl) || Cl <- Clients],
    ok = shardnode:stop_node(Node),
    await_members(Nodes -- [Node]),
    {[Node], _} = shardnode_ct:start_nodes(Config, [Opts]),
    await_members(Nodes),
    await(fun() -> lists:all(fun({Cl, K}) -> acked(Cl) > K + 10 end, lists:zip(Clients, Before)) end, 30000),
    erlang:monotonic_time(millisecond) - T0.

%% Every one of Nodes lists exactly Nodes as up members, and they agree on
%% where each type's coordinator runs.
await_members(Nodes) ->
    Sorted = lists:sort(Nodes),
    Agreed = fun() ->
                     lists:all(fun(X) -> sorted_members(X) =:= Sorted end, Nodes)
                         andalso lists:all(fun(T) -> length(lists:usort([coordinator(X, T) || X <- Nodes])) =:= 1 end,
                                           ?ROLL_TYPES)
             end,
    case shardnode_poll:until(Agreed, 30000) of
        ok -> ok;
        timeout -> ct:fail({members_not_converged, [{X, sorted_members(X)} || X <- Nodes]})
    end.

%% Every member agrees on the members, and every type's shards have a
%% home, evenly spread (as the allocation of a new shard leaves them).
await_converged(Nodes) ->
    await_members(Nodes),
    Spread = fun() -> lists:all(fun(T) -> spread(Nodes, T) end, ?ROLL_TYPES) end,
    case shardnode_poll:until(Spread, 30000) of
        ok -> ok;
        timeout -> ct:fail({not_spread, [{X, [{T, shard_count(X, T)} || T <- ?ROLL_TYPES]} || X <- Nodes]})
    end.

coordinator(Node, Type) ->
    case catch shardnode:coordinator(Node, Type) of
        {ok, C} -> C;
        Other -> {Node, Other}
    end.

%% The members Node lists as up, sorted; `error' when it does not answer.
sorted_members(Node) ->
    case shardnode_ct:members(Node) of
        error -> error;
        Members -> lists:sort(Members)
    end.

%% An entity id of each shard.
one_id_per_shard() ->
    maps:values(maps:from_list([{shardnode:shard_id({warm, I}, ?ROLL_SHARDS), {warm, I}}
                                || I <- lists:seq(1000, 1, -1)])).

%% Whether Nodes host every shard of Type between them, at most one apart.
spread(Nodes, Type) ->
    Counts = [shard_count(N, Type) || N <- Nodes],
    lists:all(fun is_integer/1, Counts) andalso lists:sum(Counts) =:= ?ROLL_SHARDS
        andalso lists:max(Counts) - lists:min(Counts) =< 1.

shard_count(Node, Type) ->
    case catch gen_server:call({Type, Node}, get_shard_region_state, 2000) of
        {ok, State} -> maps:size(State);
        _ -> unknown
    end.

%% The options of a member that joins Seeds (the other members), hosting
%% sn_tally from this node and counter, on lmdb with one replica per
%% shard, in its own data_dir. Rebalancing as by default (every 10 s): a
%% member started again gets its shards from the members that stop after
%% it, whose drains pick the members with the fewest.
roll_opts(Dir, Name, Seeds) ->
    #{name => Name ++ "@127.0.0.1",
      join => Seeds,
      types => [counter],
      entities => #{tally => sn_tally},
      config => #{number_of_shards => ?ROLL_SHARDS, state_store => lmdb, state_replicas => 1,
                  data_dir => filename:join(Dir, Name),
                  heartbeat_interval_ms => 200, failure_timeout_ms => 1000, stable_after_ms => 1000,
                  retry_interval_ms => 300}}.
