%% What a team reads in the log of a normal day: a start says what the node
%% runs in a handful of lines and warns of nothing, alone or in a cluster,
%% on LMDB with replicas, with an Erlang host, and when a whole cluster is
%% started again. Each case counts the lines of each node by level.
%%
%%   rebar3 ct --dir test --suite shardnode_logs_SUITE
-module(shardnode_logs_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-import(sn_test, [await/1, await/2, call/3, call/4, same_up_members/1]).

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1, end_per_testcase/2]).
-export([a_node_alone_starts_quietly/1,
         a_node_on_lmdb_starts_quietly/1,
         a_node_with_an_erlang_host_starts_quietly/1,
         three_members_with_replicas_start_quietly/1,
         a_cluster_started_again_warns_of_nothing/1]).

-define(SHARDS, 30).
%% Info lines a start may take: what the node runs, its metrics port, that
%% it is up, a line per member connected and per member joined, forming
%% the cluster, a line per type whose coordinator runs here, one per
%% rebalance round: a handful, never one per shard.
-define(START_INFO_LINES, 16).

suite() -> [{timetrap, {minutes, 3}}].

all() ->
    [a_node_alone_starts_quietly,
     a_node_on_lmdb_starts_quietly,
     a_node_with_an_erlang_host_starts_quietly,
     three_members_with_replicas_start_quietly,
     a_cluster_started_again_warns_of_nothing].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(shardnode),
    Config.

end_per_suite(_Config) ->
    ?assertEqual([], shardnode:which_nodes()),
    ok.

end_per_testcase(_Case, Config) ->
    shardnode_ct:stop_all_nodes(Config),
    ?assertEqual([], shardnode:which_nodes()).

%%====================================================================
%% Cases
%%====================================================================

a_node_alone_starts_quietly(Config) ->
    {[N], _} = shardnode_ct:start_nodes(Config, [opts("alone", #{})]),
    [?assertEqual(1, call(N, I, incr)) || I <- lists:seq(1, 60)],
    quiet([N]).

%% One member on LMDB keeps no replicas (there is no other member to keep
%% them): nothing to warn of.
a_node_on_lmdb_starts_quietly(Config) ->
    {[N], _} = shardnode_ct:start_nodes(Config, [opts("lmdb", lmdb(Config, "lmdb"))]),
    [?assertEqual(1, call(N, I, incr)) || I <- lists:seq(1, 60)],
    quiet([N]).

a_node_with_an_erlang_host_starts_quietly(Config) ->
    Opts = (opts("host", #{}))#{entities => #{cart => sn_cart}},
    {[N], _} = shardnode_ct:start_nodes(Config, [Opts]),
    [?assertEqual(ok, call(N, cart, I, {add, apple, 1})) || I <- lists:seq(1, 20)],
    quiet([N]).

%% Three members on LMDB with a replica each, started with one seed list:
%% every shard allocated and replicated, no warning on any member.
three_members_with_replicas_start_quietly(Config) ->
    {Ports, _} = start_cluster(Config, "rep"),
    await(fun() -> replicated(Ports) end, 30000),
    quiet(maps:keys(Ports)).

%% The whole cluster stopped (SIGTERM to each) and started again with the
%% same options, one member after another: its shards wait for their
%% replica sets while the members come back, and nothing of that is a
%% warning.
a_cluster_started_again_warns_of_nothing(Config) ->
    {Ports, Config1} = start_cluster(Config, "again"),
    Nodes = lists:sort(maps:keys(Ports)),
    await(fun() -> replicated(Ports) end, 30000),
    [ok = shardnode:stop_node(N) || N <- Nodes],
    {Nodes, _} = shardnode_ct:start_nodes(Config1, [cluster_opts(Config, Nodes, N, Ports) || N <- Nodes]),
    await(fun() -> same_up_members(Nodes) end, 30000),
    await(fun() -> lists:all(fun(I) -> (catch call(hd(Nodes), I, get)) =:= 1 end, lists:seq(1, 60)) end, 30000),
    await(fun() -> replicated(Ports) end, 30000),
    %% Not a handful of lines here: the members' own pasts are in them
    %% (remembered members asked, shards continuing on their replicas).
    no_warnings(Nodes),
    %% One coordinator from the start, never a second for a moment: a
    %% member that counted itself the oldest told replica sets the others
    %% never took, and its shards waited for good.
    Said = fun(Text) -> length([L || N <- Nodes, {ok, Ls} <- [shardnode:output(N)], L <- Ls,
                                     binary:match(L, Text) =/= nomatch])
           end,
    ?assertEqual({1, 0}, {Said(<<"coordinator counter: active here">>),
                          Said(<<"coordinator counter: no longer active here">>)}).

%%====================================================================
%% Helpers
%%====================================================================

opts(Prefix, Config) ->
    #{name => shardnode_ct:unique_name(Prefix) ++ "@127.0.0.1",
      config => maps:merge(#{number_of_shards => ?SHARDS}, Config)}.

lmdb(Config, Name) ->
    #{state_store => lmdb, data_dir => filename:join(?config(priv_dir, Config), Name)}.

%% Three members started at once with one seed list, each with a metrics
%% port: #{Node => Port}.
start_cluster(Config, Prefix) ->
    Names = lists:sort([list_to_atom(shardnode_ct:unique_name(Prefix) ++ "@127.0.0.1") || _ <- lists:seq(1, 3)]),
    Ports = maps:from_list([{N, shardnode_ct:free_port()} || N <- Names]),
    {Nodes, Config1} = shardnode_ct:start_nodes_at_once(Config, [cluster_opts(Config, Names, N, Ports)
                                                                 || N <- Names]),
    ?assertEqual(Names, Nodes),
    await(fun() -> same_up_members(Nodes) end, 30000),
    await(fun() -> lists:all(fun(I) -> (catch call(hd(Nodes), I, incr)) =:= 1 end, lists:seq(1, 60)) end, 30000),
    {Ports, Config1}.

cluster_opts(Config, Seeds, Node, Ports) ->
    [Name, _] = string:split(atom_to_list(Node), "@"),
    #{name => atom_to_list(Node), join => Seeds,
      config => maps:merge(#{number_of_shards => ?SHARDS, state_replicas => 1,
                             metrics_port => maps:get(Node, Ports)}, lmdb(Config, Name))}.

%% The coordinator (on one of the members) counts no replica missing and
%% no shard waiting for its replica set.
replicated(Ports) ->
    Pages = [P || {200, P} <- [sn_test:http_get(Port, "/metrics") || Port <- maps:values(Ports)]],
    lists:any(fun(Page) ->
                      has(Page, <<"shardnode_coordinator_active{type=\"counter\"} 1">>)
                          andalso has(Page, <<"shardnode_shard_replicas_missing{type=\"counter\"} 0">>)
                          andalso has(Page, <<"shardnode_shards_waiting{type=\"counter\"} 0">>)
              end, Pages).

has(Page, Line) ->
    binary:match(Page, <<"\n", Line/binary, "\n">>) =/= nomatch.

%% No warning or error on any node, and a handful of info lines each.
quiet(Nodes) ->
    Counts = [{N, count(N)} || N <- Nodes],
    ct:log("lines by level: ~p", [Counts]),
    [begin
         {ok, Lines} = shardnode:output(N),
         Loud = [L || L <- Lines, level(L) =:= warning orelse level(L) =:= error],
         ?assertEqual({N, []}, {N, Loud}),
         ?assert(maps:get(info, C, 0) =< ?START_INFO_LINES, {N, too_many_info_lines, C})
     end || {N, C} <- Counts],
    ok.

no_warnings(Nodes) ->
    ct:log("lines by level: ~p", [[{N, count(N)} || N <- Nodes]]),
    [begin
         {ok, Lines} = shardnode:output(N),
         ?assertEqual({N, []}, {N, [L || L <- Lines, level(L) =:= warning orelse level(L) =:= error]})
     end || N <- Nodes],
    ok.

count(N) ->
    {ok, Lines} = shardnode:output(N),
    lists:foldl(fun(L, Acc) -> maps:update_with(level(L), fun(X) -> X + 1 end, 1, Acc) end, #{}, Lines).

level(Line) ->
    case re:run(Line, <<"level=([a-z]+)">>, [{capture, all_but_first, binary}]) of
        {match, [L]} -> binary_to_atom(L);
        nomatch -> other
    end.
