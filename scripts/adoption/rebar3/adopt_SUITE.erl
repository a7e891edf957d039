%% The common_test suite of a user's project that depends on shardnode
%% (scripts/adoption-test.sh copies it there; it is kept out of test/,
%% whose suites run in this repository): nothing here knows where the
%% dependency lives; the wrapper finds its C node in priv/.
-module(adopt_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1]).
-export([a_counter_counts/1]).

all() -> [a_counter_counts].

init_per_suite(Config0) ->
    {[C], Config} = shardnode_ct:start_nodes(Config0, [#{types => [counter]}]),
    [{c, C} | Config].

end_per_suite(Config) ->
    shardnode_ct:stop_nodes(Config).

a_counter_counts(Config) ->
    C = ?config(c, Config),
    Priv = code:priv_dir(shardnode),
    ct:log("the C node runs from ~ts", [Priv]),
    ?assert(filelib:is_regular(filename:join(Priv, "shardnode"))),
    ?assertEqual(1, gen_server:call({counter, C}, {<<"a">>, incr})),
    ?assertEqual(2, gen_server:call({counter, C}, {<<"a">>, incr})).
