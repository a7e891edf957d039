%% The limit on entity types a node hosts (16, c_src/base/node_limits.h),
%% against real nodes at the limit and one past it.
%%
%% The suite builds 14 plugin types (test/limit_type.c, named t1..t14) into
%% a directory of its own, which the nodes load them from (plugin_dir).
%% With the three built-ins that is 17 types to choose from:
%%
%%   - two nodes hosting 16 types each: every type answers through either
%%     node, and after one node is killed and downed, every type's shards
%%     that lived there are served by the other (each type's region hears
%%     of the nodedown; from the 17th listener on that once failed silently);
%%   - a node asked to host 17 refuses to start, with one line naming the
%%     limit and exit status 2.
-module(shardnode_limits_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([sixteen_types_on_two_nodes_survive_a_crash/1,
         seventeen_types_are_refused/1]).

-define(SHARDS, 10).
-define(PLUGINS, 14).

suite() -> [{timetrap, {minutes, 2}}].

all() -> [sixteen_types_on_two_nodes_survive_a_crash, seventeen_types_are_refused].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(shardnode),
    Dir = filename:join(?config(priv_dir, Config), "plugins"),
    [ok = test_plugins:build(Dir, plugin(K)) || K <- lists:seq(1, ?PLUGINS)],
    [{plugin_dir, Dir} | Config].

end_per_suite(_Config) ->
    ?assertEqual([], shardnode:which_nodes()),
    ok.

init_per_testcase(_Case, Config) -> Config.

%% A case that failed half-way leaves its nodes running: stop them here.
end_per_testcase(_Case, Config) ->
    shardnode_ct:stop_nodes(Config, shardnode:which_nodes()).

%%====================================================================
%% Cases
%%====================================================================

sixteen_types_on_two_nodes_survive_a_crash(Config) ->
    Types = types(16),
    Opts = #{types => Types,
             config => #{plugin_dir => ?config(plugin_dir, Config),
                         number_of_shards => ?SHARDS, heartbeat_interval_ms => 200,
                         failure_timeout_ms => 1000, retry_interval_ms => 200}},
    {[A], Config1} = shardnode_ct:start_nodes(Config, [Opts]),
    {[B], Config2} = shardnode_ct:start_nodes(Config1, [Opts#{join => [A]}]),
    await(fun() -> up([A, B], A) andalso up([A, B], B) end),
    ?assertEqual({ok, Types}, gen_server:call({shardnode, A}, shard_types)),
    Ids = lists:seq(1, 40),
    %% Every type answers through either node, wherever its shard lives.
    [?assertEqual(reply(T, I), call(N, T, I)) || T <- Types, I <- Ids, N <- [A, B]],
    %% Ids whose shard lives on B, per type: those must move to A.
    OnB = [{T, I} || T <- Types, I <- Ids, hosts(B, T, I)],
    ?assertNotEqual([], OnB),
    ok = shardnode:kill_node(B),
    ?assertEqual(ok, gen_server:call({shardnode, A}, {down, B})),
    [await(fun() -> (catch call(A, T, I, 500)) =:= reply(T, I) end) || {T, I} <- OnB],
    [?assert(hosts(A, T, I)) || {T, I} <- OnB],
    shardnode_ct:stop_nodes(Config2, [A]),
    ?assertEqual([], shardnode:which_nodes()).

seventeen_types_are_refused(Config) ->
    Opts = #{types => types(17), config => #{plugin_dir => ?config(plugin_dir, Config)}},
    {error, {exited, 2, Lines}} = shardnode:start_node(Opts#{name => "limits17@127.0.0.1"}),
    ?assert(lists:any(fun(L) -> string:find(L, "at most 16") =/= nomatch end,
                      [unicode:characters_to_list(L) || L <- Lines])),
    ok.

%%====================================================================
%% Helpers
%%====================================================================

%% The built-ins, then plugins, N in all.
types(N) ->
    lists:sublist([counter, kv, echo] ++ [plugin(K) || K <- lists:seq(1, ?PLUGINS)], N).

plugin(K) -> list_to_atom("t" ++ integer_to_list(K)).

reply(counter, _) -> 0;
reply(kv, _) -> [];
reply(echo, I) -> {probe, I};
reply(T, I) -> {T, {probe, I}}.

call(Node, T, I) -> call(Node, T, I, 5000).

call(Node, counter, I, Timeout) -> gen_server:call({counter, Node}, {I, get}, Timeout);
call(Node, kv, I, Timeout) -> gen_server:call({kv, Node}, {I, keys}, Timeout);
call(Node, T, I, Timeout) -> gen_server:call({T, Node}, {I, {probe, I}}, Timeout).

hosts(Node, Type, Id) ->
    {ok, State} = gen_server:call({Type, Node}, get_shard_region_state),
    maps:is_key(erlang:phash2(Id, ?SHARDS), State).

up(Nodes, Asked) ->
    case catch gen_server:call({shardnode, Asked}, members) of
        {ok, Ms} -> lists:sort([N || #{node := N, status := up} <- Ms]) =:= lists:sort(Nodes);
        _ -> false
    end.

await(Fun) -> sn_test:await(Fun, 20000).
