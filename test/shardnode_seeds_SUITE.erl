%% Seeds, remembered members and new incarnations (docs/contract.md "A
%% cluster"): the everyday ways a cluster is started and its members are
%% started again, none of which may split it, serve an old record, or leave
%% an entity without an answer.
%%
%% - Every member started with the same seed list, itself included (what a
%%   Kubernetes StatefulSet gives every pod), forms one cluster: the first
%%   seed forms it once no other seed answers within seed_timeout_ms.
%% - The first member of the contract's own example (started with no
%%   `join'), killed and started again with its own options, rejoins the
%%   cluster it remembers in data_dir/members instead of forming a second
%%   one that serves its old records.
%% - A member started again at once, as a supervisor does, replaces its old
%%   incarnation at once: it keeps running, and every entity answers within
%%   the fail-over bound.
%%
%% The nodes keep their state in LMDB with one replica per shard, as a
%% production cluster would.
%%
%%   rebar3 ct --dir test --suite shardnode_seeds_SUITE
-module(shardnode_seeds_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-import(sn_test, [await/1, await/2, same_up_members/1, stop_supervisor/1]).
-import(shardnode_ct, [members/1, member_status/2]).

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1, end_per_testcase/2]).
-export([one_seed_list_for_every_member_forms_one_cluster/1,
         the_first_member_restarted_with_its_own_options_rejoins/1,
         a_member_restarted_at_once_by_a_supervisor_keeps_running/1,
         a_member_restarted_after_a_second_and_a_half_keeps_running/1,
         a_whole_cluster_killed_and_started_again_in_reverse_order_forms_one/1]).
%% supervisor callback: the test's own supervisor
-export([init/1]).

-define(SHARDS, 30).
-define(IDS, 60).
%% failure_timeout_ms + stable_after_ms + a heartbeat, with room for a
%% busy two-core machine
-define(FAILOVER_MS, 10000).

suite() -> [{timetrap, {minutes, 3}}].

all() ->
    [one_seed_list_for_every_member_forms_one_cluster,
     the_first_member_restarted_with_its_own_options_rejoins,
     a_member_restarted_at_once_by_a_supervisor_keeps_running,
     a_member_restarted_after_a_second_and_a_half_keeps_running,
     a_whole_cluster_killed_and_started_again_in_reverse_order_forms_one].

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

%% Three nodes, each started with `join => [A, B, C]', all at once: A, the
%% first seed, forms the cluster once neither B nor C answers as a member
%% within seed_timeout_ms (5 s by default), and B and C join it. A killed
%% and started again with the same arguments finds B and C and rejoins:
%% the cluster stays one, and every counter keeps its value.
one_seed_list_for_every_member_forms_one_cluster(Config) ->
    Names = [name("one") || _ <- lists:seq(1, 3)],
    Seeds = [list_to_atom(N) || N <- Names],
    OptsOf = fun(Name) -> (opts(Config, Name))#{join => Seeds} end,
    {Nodes, Config1} = shardnode_ct:start_nodes_at_once(Config, [OptsOf(N) || N <- Names]),
    ?assertEqual(Seeds, Nodes),
    [A, B, _] = Nodes,
    await(fun() -> same_up_members(Nodes) end, 20000),
    ?assertEqual(A, hd(members(B)), "the first seed formed the cluster: it is the oldest"),
    Ids = lists:seq(1, ?IDS),
    await(fun() -> all_answer(Nodes, Ids) end),
    [?assertEqual(1, call(B, I, incr)) || I <- Ids],
    ok = shardnode:kill_node(A),
    {[A], _} = shardnode_ct:start_nodes(Config1, [OptsOf(atom_to_list(A))]),
    await(fun() -> same_up_members(Nodes) andalso all_answer(Nodes, Ids) end, 20000),
    [?assertEqual(2, call(A, I, incr)) || I <- Ids].

%% The contract's own example: A started alone, B and C `join => [A]'. A
%% is killed and started again with its own options (no `join') on its
%% data_dir: it rejoins B and C, the members it remembers, and reads what
%% the cluster acknowledged, never its own old records. Then again once
%% the others have downed it.
the_first_member_restarted_with_its_own_options_rejoins(Config) ->
    {[A, B, C] = Nodes, Config1} = contract_cluster(Config),
    Ids = lists:seq(1, ?IDS),
    await(fun() -> all_answer(Nodes, Ids) end),
    [?assertEqual(1, call(B, I, incr)) || I <- Ids],
    %% started again at once
    ok = shardnode:kill_node(A),
    {[A], _} = shardnode_ct:start_nodes(Config1, [opts(Config, atom_to_list(A))]),
    await(fun() -> same_up_members(Nodes) andalso all_answer(Nodes, Ids) end, 20000),
    [?assertEqual(2, call(B, I, incr)) || I <- Ids],
    [?assertEqual(2, call(A, I, get)) || I <- Ids],
    %% started again once the others have downed it
    ok = shardnode:kill_node(A),
    await(fun() -> member_status(B, A) =:= down andalso member_status(C, A) =:= down end),
    await(fun() -> all_answer([B, C], Ids) end, ?FAILOVER_MS),
    [?assertEqual(3, call(C, I, incr)) || I <- Ids],
    {[A], _} = shardnode_ct:start_nodes(Config1, [opts(Config, atom_to_list(A))]),
    await(fun() -> same_up_members(Nodes) andalso all_answer(Nodes, Ids) end, 20000),
    [?assertEqual(3, call(A, I, get)) || I <- Ids].

%% A, the first member, runs under a supervisor of the test's, which starts
%% it again about 100 ms after a kill -9 (shardnode:child_spec/1). The new
%% incarnation replaces the old one at once: it is not downed (its OS
%% process stays the one the supervisor started), the three members agree,
%% and every counter answers within the fail-over bound with the value the
%% cluster acknowledged. Three times over.
a_member_restarted_at_once_by_a_supervisor_keeps_running(Config) ->
    NameA = name("sup"),
    A = list_to_atom(NameA),
    {ok, Sup} = supervisor:start_link(?MODULE, [shardnode:child_spec(opts(Config, NameA))]),
    try
        {[B, C], _} = shardnode_ct:start_nodes(Config, [(opts(Config, name("b")))#{join => [A]},
                                                        (opts(Config, name("c")))#{join => [A]}]),
        Nodes = [A, B, C],
        await(fun() -> same_up_members(Nodes) end),
        Ids = lists:seq(1, ?IDS),
        await(fun() -> all_answer(Nodes, Ids) end),
        [?assertEqual(1, call(B, I, incr)) || I <- Ids],
        lists:foreach(
          fun(Round) ->
                  {ok, Old} = shardnode:os_pid(A),
                  [] = os:cmd("kill -9 " ++ integer_to_list(Old)),
                  New = await_restart(A, Old),
                  T0 = erlang:monotonic_time(millisecond),
                  await(fun() -> all_answer(Nodes, Ids) end, ?FAILOVER_MS),
                  ct:log("round ~b: every entity answers through every member ~b ms after the restart",
                         [Round, erlang:monotonic_time(millisecond) - T0]),
                  await(fun() -> same_up_members(Nodes) end),
                  [?assertEqual(Round + 1, call(C, I, incr)) || I <- Ids],
                  [?assertEqual(Round + 1, call(A, I, get)) || I <- Ids],
                  ?assertEqual({ok, New}, shardnode:os_pid(A), "the new incarnation keeps running")
          end, [1, 2, 3])
    after
        stop_supervisor(Sup)
    end,
    await(fun() -> shardnode_ct:gone(A) end).

%% The same with a pause of 1.5 s between the kill and the start: the
%% others may or may not have found the old incarnation unreachable by
%% then, and either way the new one replaces it.
a_member_restarted_after_a_second_and_a_half_keeps_running(Config) ->
    {[A, B, C] = Nodes, Config1} = contract_cluster(Config),
    Ids = lists:seq(1, ?IDS),
    await(fun() -> all_answer(Nodes, Ids) end),
    [?assertEqual(1, call(B, I, incr)) || I <- Ids],
    ok = shardnode:kill_node(A),
    timer:sleep(1500), %% the scenario: the time a slow supervisor takes
    {[A], _} = shardnode_ct:start_nodes(Config1, [opts(Config, atom_to_list(A))]),
    {ok, OsPid} = shardnode:os_pid(A),
    await(fun() -> all_answer(Nodes, Ids) end, ?FAILOVER_MS),
    await(fun() -> same_up_members(Nodes) end),
    [?assertEqual(2, call(C, I, incr)) || I <- Ids],
    [?assertEqual(2, call(A, I, get)) || I <- Ids],
    ?assertEqual({ok, OsPid}, shardnode:os_pid(A), "the new incarnation keeps running").

%% One seed list; all three killed with kill -9, then started again last
%% first, one after the other: B and C keep asking (they are no first
%% seed), A, the first seed, finds nobody that is a member within
%% seed_timeout_ms and forms the cluster, and they join it. Every counter
%% keeps its value (LMDB and its replica on each data_dir). Then again, B
%% first.
a_whole_cluster_killed_and_started_again_in_reverse_order_forms_one(Config) ->
    Names = [name("all") || _ <- lists:seq(1, 3)],
    Seeds = [list_to_atom(N) || N <- Names],
    OptsOf = fun(Name) -> (opts(Config, Name))#{join => Seeds} end,
    {Nodes, Config1} = shardnode_ct:start_nodes_at_once(Config, [OptsOf(N) || N <- Names]),
    await(fun() -> same_up_members(Nodes) end, 20000),
    Ids = lists:seq(1, ?IDS),
    await(fun() -> all_answer(Nodes, Ids) end),
    [?assertEqual(1, call(lists:nth(1 + I rem 3, Nodes), I, incr)) || I <- Ids],
    %% Twice, the second time in another order: each node's up-number
    %% from before (its members file) may then be above the one it is
    %% admitted with now, which it must take all the same.
    lists:foreach(
      fun({Round, Order}) ->
              [ok = shardnode:kill_node(N) || N <- Nodes],
              [{[N], _} = shardnode_ct:start_nodes(Config1, [OptsOf(atom_to_list(N))]) || N <- Order],
              await(fun() -> same_up_members(Nodes) andalso all_answer(Nodes, Ids) end, 30000),
              [?assertEqual(Round + 1, call(lists:nth(1 + I rem 3, Nodes), I, incr)) || I <- Ids]
      end, [{1, lists:reverse(Nodes)}, {2, [lists:nth(2, Nodes), lists:nth(1, Nodes), lists:nth(3, Nodes)]}]).

%%====================================================================
%% Helpers
%%====================================================================

%% The cluster of docs/contract.md "A cluster": A alone, B and C join A.
contract_cluster(Config) ->
    {[A], Config1} = shardnode_ct:start_nodes(Config, [opts(Config, name("a"))]),
    {[B, C], Config2} = shardnode_ct:start_nodes(Config1, [(opts(Config, name("b")))#{join => [A]},
                                                          (opts(Config, name("c")))#{join => [A]}]),
    await(fun() -> same_up_members([A, B, C]) end),
    {[A, B, C], Config2}.

name(Prefix) ->
    shardnode_ct:unique_name(Prefix) ++ "@127.0.0.1".

%% A node's options: LMDB in a data_dir of its own under the case's
%% priv_dir (the same for every start of that name), one replica per shard.
opts(Config, Name) ->
    DataDir = filename:join(?config(priv_dir, Config), Name),
    #{name => Name, types => [counter],
      config => #{number_of_shards => ?SHARDS, heartbeat_interval_ms => 200,
                  rebalance_interval_ms => 300, retry_interval_ms => 300,
                  %% 2 s: a restarted member is not to be taken for a silent
                  %% one while a busy two-core machine runs other suites
                  failure_timeout_ms => 2000, stable_after_ms => 1000,
                  state_store => lmdb, state_replicas => 1, data_dir => DataDir}}.

call(Node, Id, Msg) ->
    gen_server:call({counter, Node}, {Id, Msg}, 5000).

%% Every entity of Ids answers a get through every node within a second.
all_answer(Nodes, Ids) ->
    lists:all(fun(N) ->
                      lists:all(fun(I) ->
                                        try gen_server:call({counter, N}, {I, get}, 1000) of
                                            V -> is_integer(V)
                                        catch exit:_ -> false
                                        end
                                end, Ids)
              end, Nodes).

%% The OS pid of Node once its supervisor has started it again (another
%% than Old) and it answers.
await_restart(Node, Old) ->
    await(fun() ->
                  case shardnode:os_pid(Node) of
                      {ok, P} when P =/= Old ->
                          (catch gen_server:call({shardnode, Node}, shard_types, 1000)) =:= {ok, [counter]};
                      _ ->
                          false
                  end
          end),
    {ok, New} = shardnode:os_pid(Node),
    New.

init(Children) ->
    {ok, {#{strategy => one_for_one, intensity => 20, period => 10}, Children}}.
