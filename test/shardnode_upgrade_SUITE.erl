%% Rolling upgrades (docs/contract.md "Rolling upgrades"): a cluster of the
%% previous release, rolled to the build at hand one member at a time while
%% clients use it, loses no acknowledged write, never lets one go back, and
%% leaves no call without an answer; at the end every member runs the new
%% version.
%%
%% init_per_suite builds the previous release — the commit release/previous
%% names — from the repository's own history with
%% scripts/build-previous-release.sh (about a minute the first time;
%% build/previous/ keeps it). A clone that does not hold that commit (a
%% shallow one) fails every case with the script's message, which says how to
%% fetch the history: the upgrade is never skipped silently.
%%
%% Each case starts three members of the previous release hosting the C
%% counter type, the way that release's contract starts a cluster (the first
%% member alone, the others joining it), and puts load on them: through each
%% member an incrementer (sn_test: every acknowledged value must be greater
%% than the one before) and a checker that counts the calls answered, the
%% calls answered with an error (by reason) and the calls that got no answer
%% at all within 10 s (a timeout). Then it rolls the cluster as a Kubernetes
%% StatefulSet does, the last started first: SIGTERM (a graceful leave), the
%% member gone, the new build started with the same name and data_dir and
%% the seed list this release asks every member to be given (the previous
%% release keeps no data_dir/members, so the member it started without
%% seeds would otherwise form a cluster of its own), then the next member
%% once every member lists the same three up and every counter answers
%% through every member. After the last one:
%%
%% - no acknowledged increment lost or gone back: the clients saw each
%%   counter only go up, and every counter reads at least the last value
%%   acknowledged for it;
%% - no call left without an answer: the checkers saw no timeout;
%% - every member runs the new version (its admin's sys:get_state, and the
%%   version in its log's first record), and each knows every other speaks
%%   the new protocol (sys:get_state's protocols; during the roll a new
%%   member sees the old ones at 1, the version of a member that states
%%   none).
%%
%% Once on LMDB with one replica per shard, once on PostgreSQL (a server of
%% its own, scripts/pg-server.sh).
%%
%%   rebar3 ct --dir test --suite shardnode_upgrade_SUITE
-module(shardnode_upgrade_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-import(sn_test, [await/2, start_incrementer/4, acked/1, stop_incrementer/1, same_up_members/1]).
-import(shardnode_ct, [members/1]).

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([lmdb_with_a_replica_rolls_to_the_new_build/1,
         postgres_rolls_to_the_new_build/1]).

-define(SHARDS, 30).
%% counters per incrementer and per checker, on each member
-define(INCR_IDS, 20).
-define(CHECK_IDS, 10).
%% a call without an answer this long is a timeout
-define(CALL_MS, 10000).
%% a member started, admitted and given shards, every counter answering
-define(SETTLE_MS, 40000).

suite() -> [{timetrap, {minutes, 4}}].

all() ->
    [lmdb_with_a_replica_rolls_to_the_new_build,
     postgres_rolls_to_the_new_build].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(shardnode),
    Root = test_plugins:project_root(),
    {Tag, Commit} = previous_release(Root),
    Script = filename:join([Root, "scripts", "build-previous-release.sh"]),
    T0 = erlang:monotonic_time(millisecond),
    Previous = case sh(Script) of
                   {0, Out} ->
                       Exe = lists:last(string:lexemes(Out, "\n")),
                       ct:log("previous release ~s (~s) built in ~b ms: ~ts",
                              [Tag, Commit, erlang:monotonic_time(millisecond) - T0, Exe]),
                       {ok, Exe};
                   {Status, Out} ->
                       ct:pal("~ts exited with status ~b:~n~ts", [Script, Status, Out]),
                       {error, Out}
               end,
    {ok, Vsn} = application:get_key(shardnode, vsn),
    [{root, Root}, {previous, Previous}, {previous_version, tl(Tag)}, {new_version, Vsn} | Config].

end_per_suite(_Config) ->
    ?assertEqual([], shardnode:which_nodes()),
    ok.

init_per_testcase(postgres_rolls_to_the_new_build, Config) ->
    Dir = string:trim(os:cmd("mktemp -d -u /tmp/sn-pg-upgrade-XXXXXX")),
    case sh(pg_script(Config) ++ " start " ++ Dir) of
        {0, Port} ->
            Db = "upgrade",
            {0, _} = sh(io_lib:format("psql -X -q -h 127.0.0.1 -p ~s -U postgres -d postgres -c 'CREATE DATABASE ~s'",
                                      [string:trim(Port), Db])),
            Conninfo = io_lib:format("host=127.0.0.1 port=~s user=postgres dbname=~s", [string:trim(Port), Db]),
            [{pg_dir, Dir}, {store, #{state_store => postgres, postgres_conninfo => lists:flatten(Conninfo)}}
             | Config];
        {_, Why} ->
            {skip, "cannot start a PostgreSQL server: " ++ Why}
    end;
init_per_testcase(_Case, Config) ->
    [{store, #{state_store => lmdb, state_replicas => 1}} | Config].

end_per_testcase(_Case, Config) ->
    %% Every incarnation of every member is stopped and proven gone.
    Result = shardnode_ct:stop_nodes(Config, shardnode:which_nodes()),
    case ?config(pg_dir, Config) of
        undefined -> ok;
        Dir -> {0, _} = sh(pg_script(Config) ++ " stop " ++ Dir)
    end,
    ?assertEqual([], shardnode:which_nodes()),
    Result.

%%====================================================================
%% Cases
%%====================================================================

%% LMDB with one replica per shard: each member keeps its records in its
%% data_dir, which the new build opens as the old one left it.
lmdb_with_a_replica_rolls_to_the_new_build(Config) ->
    roll(Config).

%% PostgreSQL: every member reads and writes one database, which the new
%% build finds as the old one left it.
postgres_rolls_to_the_new_build(Config) ->
    roll(Config).

%%====================================================================
%% The roll
%%====================================================================

roll(Config) ->
    Exe = previous_executable(Config),
    Old = ?config(previous_version, Config),
    New = ?config(new_version, Config),
    T0 = erlang:monotonic_time(millisecond),
    [NA, NB, NC] = Names = [name(P) || P <- ["upa", "upb", "upc"]],
    Nodes = [A, B, C] = [list_to_atom(N) || N <- Names],
    %% The previous release's cluster, as its contract starts one.
    {[A], _} = shardnode_ct:start_nodes(Config, [(opts(Config, NA))#{executable => Exe}]),
    {[B, C], _} = shardnode_ct:start_nodes(Config, [(opts(Config, N))#{executable => Exe, join => [A]}
                                                     || N <- [NB, NC]]),
    await(fun() -> same_up_members(Nodes) end, ?SETTLE_MS),
    ?assertEqual([Old, Old, Old], [version(N) || N <- Nodes], "the cluster runs the previous release"),
    Ids = [{K, ids(K)} || K <- lists:seq(1, 3)],
    AllIds = lists:append([I ++ Ch || {_, {I, Ch}} <- Ids]),
    await(fun() -> all_answer(Nodes, AllIds) end, ?SETTLE_MS),
    ct:log("~s cluster up and answering after ~b ms", [Old, since(T0)]),
    Incrementers = [start_incrementer(N, counter, I, continue) || {N, {_, {I, _}}} <- lists:zip(Nodes, Ids)],
    Checkers = [start_checker(N, Ch) || {N, {_, {_, Ch}}} <- lists:zip(Nodes, Ids)],
    await(fun() -> lists:all(fun(Cl) -> acked(Cl) > 100 end, Incrementers) end, ?SETTLE_MS),
    %% The roll: the last started first, as a StatefulSet goes.
    lists:foreach(
      fun(Node) ->
              R0 = erlang:monotonic_time(millisecond),
              Before = lists:sum([acked(Cl) || Cl <- Incrementers]),
              Shards = [{N, shard_count(N)} || N <- Nodes],
              ok = shardnode_ct:stop_nodes(Config, [Node]),
              Stopped = since(R0),
              {[Node], _} = shardnode_ct:start_nodes(Config, [(opts(Config, atom_to_list(Node)))#{join => Nodes}]),
              %% The log's first record, read while the log is short.
              ?assertMatch([_], [L || L <- output(Node), nomatch =/= string:find(L, start_line(New, Node))]),
              await(fun() -> same_up_members(Nodes) andalso all_answer(Nodes, AllIds) end, ?SETTLE_MS),
              Back = since(R0),
              ?assertEqual(New, version(Node)),
              %% The new member knows who speaks which protocol: its own and
              %% the other new ones' stated (2), the old ones' none (1).
              Expected = maps:from_list([{N, case version(N) of New -> 2; _ -> 1 end} || N <- Nodes]),
              await(fun() -> protocols(Node) =:= Expected end, ?SETTLE_MS),
              %% The next member leaves only once this one has its share of
              %% the shards: the old members then hand theirs to new ones.
              await(fun() -> balanced(Nodes) end, ?SETTLE_MS),
              ct:log("~s rolled to ~s: shards ~p before; gone in ~b ms; back and every counter answering "
                     "~b ms after the SIGTERM; balanced after ~b ms; versions ~p; ~b increments acknowledged "
                     "meanwhile",
                     [Node, New, Shards, Stopped, Back, since(R0), [{N, version(N)} || N <- Nodes],
                      lists:sum([acked(Cl) || Cl <- Incrementers]) - Before])
      end, [C, B, A]),
    %% Still taking load after the last member.
    After = lists:sum([acked(Cl) || Cl <- Incrementers]),
    await(fun() -> lists:sum([acked(Cl) || Cl <- Incrementers]) > After + 100 end, ?SETTLE_MS),
    Acked = lists:foldl(fun(Cl, Acc) -> maps:merge(Acc, stop_incrementer(Cl)) end, #{}, Incrementers),
    Checked = [stop_checker(Ch) || Ch <- Checkers],
    CheckAcked = lists:foldl(fun(#{acks := As}, Acc) -> maps:merge(Acc, As) end, #{}, Checked),
    ct:log("incrementers: ~b acknowledged increments over ~b counters; checkers: ~p",
           [lists:sum(maps:values(Acked)), maps:size(Acked),
            [maps:without([acks], S) || S <- Checked]]),
    %% No call left without an answer, no acknowledged value gone back.
    ?assertEqual([], lists:append([T || #{timeouts := T} <- Checked]), "calls without an answer"),
    ?assertEqual([], lists:append([Bk || #{back := Bk} <- Checked]), "acknowledged values that went back"),
    %% No acknowledged write lost: every counter, read through every member,
    %% holds at least its last acknowledged value.
    Last = maps:merge(Acked, CheckAcked),
    ?assertEqual([], [{N, Id, V, Got} || N <- Nodes, {Id, V} <- lists:sort(maps:to_list(Last)),
                                         Got <- [read(N, Id)], not (is_integer(Got) andalso Got >= V)]),
    %% Every member runs the new build, and each knows that all speak its
    %% protocol: a feature gated on it is on.
    ?assertEqual([New, New, New], [version(N) || N <- Nodes]),
    await(fun() -> lists:all(fun(N) -> protocols(N) =:= maps:from_list([{M, 2} || M <- Nodes]) end, Nodes) end,
          ?SETTLE_MS),
    ct:log("rolled ~s to ~s in ~b ms", [Old, New, since(T0)]).

%%====================================================================
%% The checker: a client that tells a call without an answer from one
%% answered with an error
%%====================================================================

%% Increments Ids through Node round robin, one call out at a time, as
%% the incrementer does, and keeps: the last acknowledged value of each
%% counter, values that went back, the number of calls answered with a
%% value, the calls answered otherwise by reason (an {error, _} reply, or
%% an exit such as nodedown or noproc while the member is away), and the
%% calls that got nothing within ?CALL_MS (timeouts, with the counter and
%% when the call was made).
start_checker(Node, Ids) ->
    spawn_link(fun() -> checker({counter, Node}, Ids, #{acks => #{}, back => [], answered => 0,
                                                        errors => #{}, timeouts => []}) end).

stop_checker(Checker) ->
    Checker ! {stop, self()},
    receive {checked, Checker, S} -> S
    after ?CALL_MS + 5000 -> ct:fail({checker_did_not_finish, Checker})
    end.

checker(Region, [Id | Rest], S) ->
    receive
        {stop, From} -> From ! {checked, self(), S}
    after 0 ->
        T = erlang:system_time(millisecond),
        S1 = try gen_server:call(Region, {Id, incr}, ?CALL_MS) of
                 V when is_integer(V) -> ack(Id, V, S);
                 {error, Why} -> failed({error, Why}, S);
                 Other -> failed({unexpected, Other}, S)
             catch
                 exit:{timeout, _} -> S#{timeouts := [{Id, T} | maps:get(timeouts, S)]};
                 exit:{Why, _} -> failed({exit, kind(Why)}, S)
             end,
        checker(Region, Rest ++ [Id], S1)
    end.

ack(Id, V, #{acks := Acks, back := Back, answered := N} = S) ->
    Prev = maps:get(Id, Acks, 0),
    S#{acks := Acks#{Id => max(V, Prev)}, answered := N + 1,
       back := [{Id, Prev, V} || V =< Prev] ++ Back}.

%% A member away answers at once (nodedown, noproc): a client's back-off
%% of 20 ms keeps the checker from spinning meanwhile.
failed(Why, #{errors := E} = S) ->
    receive after 20 -> ok end,
    S#{errors := E#{Why => maps:get(Why, E, 0) + 1}}.

kind({nodedown, _}) -> nodedown;
kind(Why) when is_tuple(Why) -> element(1, Why);
kind(Why) -> Why.

%%====================================================================
%% Helpers
%%====================================================================

%% The counters of member K: the incrementer's and the checker's.
ids(K) ->
    {[K * 1000 + I || I <- lists:seq(1, ?INCR_IDS)],
     [K * 1000 + 500 + I || I <- lists:seq(1, ?CHECK_IDS)]}.

name(Prefix) ->
    shardnode_ct:unique_name(Prefix) ++ "@127.0.0.1".

%% A member's options, the same for every start of it and either build: its
%% data_dir under the case's priv_dir, the case's store, and settings that
%% keep the case short.
opts(Config, Name) ->
    #{name => Name, types => [counter],
      config => maps:merge(#{number_of_shards => ?SHARDS, heartbeat_interval_ms => 200,
                             rebalance_interval_ms => 300, retry_interval_ms => 300,
                             failure_timeout_ms => 1000, stable_after_ms => 1000,
                             data_dir => filename:join(?config(priv_dir, Config), Name)},
                           ?config(store, Config))}.

previous_executable(Config) ->
    case ?config(previous, Config) of
        {ok, Exe} -> Exe;
        {error, Why} -> ct:fail({previous_release_not_built, Why})
    end.

%% release/previous: its first line that is no comment, "vX.Y.Z Commit".
previous_release(Root) ->
    {ok, Text} = file:read_file(filename:join([Root, "release", "previous"])),
    [Line | _] = [L || L <- string:lexemes(binary_to_list(Text), "\n"),
                       string:trim(L) =/= "", hd(string:trim(L)) =/= $#],
    [Tag, Commit] = string:lexemes(Line, " \t"),
    {Tag, Commit}.

%% The protocol of every member, as a member of this release knows them
%% (its admin's sys:get_state).
protocols(Node) ->
    maps:get(protocols, sys:get_state({shardnode, Node}, 5000)).

%% The version a member's admin reports.
version(Node) ->
    maps:get(version, sys:get_state({shardnode, Node}, 5000)).

%% The log's first record of a build of Version names it, and the node.
start_line(Version, Node) ->
    lists:flatten(io_lib:format("shardnode ~s ~s starting: ", [Version, Node])).

output(Node) ->
    {ok, Lines} = shardnode:output(Node),
    [unicode:characters_to_list(L) || L <- Lines].

%% The shards every node's region holds differ by at most one, and each
%% holds some.
balanced(Nodes) ->
    Counts = [shard_count(N) || N <- Nodes],
    lists:min(Counts) > 0 andalso lists:max(Counts) - lists:min(Counts) =< 1.

shard_count(Node) ->
    case catch gen_server:call({counter, Node}, get_shard_region_state, 2000) of
        {ok, State} -> maps:size(State);
        _ -> 0
    end.

%% Every counter of Ids answers a get through every node within a second.
all_answer(Nodes, Ids) ->
    lists:all(fun(N) -> lists:all(fun(I) -> is_integer(read(N, I)) end, Ids) end, Nodes).

read(Node, Id) ->
    catch gen_server:call({counter, Node}, {Id, get}, 1000).

since(T0) ->
    erlang:monotonic_time(millisecond) - T0.

pg_script(Config) ->
    filename:join([?config(root, Config), "scripts", "pg-server.sh"]).

sh(Cmd) ->
    Out = os:cmd(lists:flatten(Cmd) ++ " 2>&1; echo \"rc=$?\""),
    [Rc | Rest] = lists:reverse(string:lexemes(Out, "\n")),
    {list_to_integer(string:prefix(Rc, "rc=")), string:join(lists:reverse(Rest), "\n")}.
