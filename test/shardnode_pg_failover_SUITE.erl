%% The store survives its database server (docs/contract.md, "A database
%% that fails over"): a real PostgreSQL primary with a real streaming
%% standby (scripts/pg-server.sh: `start', `standby', `kill', `promote'),
%% members whose postgres_conninfo names both hosts with
%% target_session_attrs=read-write. The primary is killed with SIGKILL
%% while clients increment counters, the standby promoted: every member
%% finds the new primary by itself, writes succeed again, and with a
%% synchronous standby no acknowledged increment is lost — read back
%% through every member, and again after every member restarted and loaded
%% its entities from the new primary.
%%
%%   rebar3 ct --dir test --suite shardnode_pg_failover_SUITE
-module(shardnode_pg_failover_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-import(sn_test, [call/3, start_incrementer/4, acked/1, stop_incrementer/1]).

-export([all/0, suite/0, init_per_testcase/2, end_per_testcase/2]).
-export([a_promoted_synchronous_standby_keeps_every_acknowledged_increment/1,
         a_promoted_asynchronous_standby_takes_the_writes_on/1,
         a_frozen_primary_is_left_for_the_promoted_standby/1]).

-define(SHARDS, 30).
%% How long a write may wait for the database (the members' setting).
-define(STORE_TIMEOUT_MS, 3000).

suite() -> [{timetrap, {minutes, 3}}].

all() ->
    [a_promoted_synchronous_standby_keeps_every_acknowledged_increment,
     a_promoted_asynchronous_standby_takes_the_writes_on,
     a_frozen_primary_is_left_for_the_promoted_standby].

%% A primary and a standby of their own for each case: synchronous, but
%% for the case of an asynchronous one.
init_per_testcase(Case, Config) ->
    {ok, _} = application:ensure_all_started(shardnode),
    Base = string:trim(os:cmd("mktemp -d -u /tmp/sn-pgfo-ct-XXXXXX")),
    Primary = Base ++ "-primary",
    Standby = Base ++ "-standby",
    case sh(script() ++ " start " ++ Primary) of
        {0, P} ->
            Sync = case Case of
                       a_promoted_asynchronous_standby_takes_the_writes_on -> "";
                       _ -> " sync"
                   end,
            %% A standby or a port that fails takes the primary with it:
            %% end_per_testcase does not run after a failed init.
            try
                {0, S} = sh(script() ++ " standby " ++ Standby ++ " " ++ Primary ++ Sync),
                [{primary_dir, Primary}, {standby_dir, Standby},
                 {primary_port, port(P)}, {standby_port, port(S)} | Config]
            catch
                Class:Reason:Stack ->
                    [sh(script() ++ " stop " ++ D) || D <- [Standby, Primary]],
                    erlang:raise(Class, Reason, Stack)
            end;
        {_, Why} ->
            {skip, "cannot start a PostgreSQL server: " ++ Why}
    end.

end_per_testcase(_Case, Config) ->
    try
        shardnode_ct:stop_all_nodes(Config)
    after
        %% The servers go whatever became of the nodes.
        [{0, _} = sh(script() ++ " stop " ++ ?config(D, Config)) || D <- [standby_dir, primary_dir]],
        ?assertEqual([], shardnode:which_nodes())
    end.

%%====================================================================
%% Cases
%%====================================================================

%% Three members, four clients incrementing 20 counters and 20 tallies
%% (written in Erlang) each through A and B
%% (one call out at a time each, remembering every acknowledged value).
%% The primary is killed with SIGKILL and the standby promoted. Within
%% store_timeout_ms plus a few seconds the clients' increments are
%% acknowledged again; every counter then reads at least its last
%% acknowledged value through every member (at most one more per client:
%% an increment committed whose reply was cut off), and again after every
%% member is stopped and started anew, loading from the new primary. No
%% entity ran twice at once.
a_promoted_synchronous_standby_keeps_every_acknowledged_increment(Config) ->
    Recorder = sn_test:start_instance_recorder(),
    try
        keeps_every_acknowledged_increment(Config),
        ?assertEqual([], sn_test:second_instances(Recorder))
    after
        exit(Recorder, kill)
    end.

keeps_every_acknowledged_increment(Config) ->
    [A, B, _] = All = start_three(Config, "fo", #{entities => #{tally => sn_tally}}),
    %% Counters (C entities) and tallies (Erlang entities, whose processes
    %% report each start and end to the recorder).
    Clients = [start_incrementer(N, T, [{K, T, I} || I <- lists:seq(1, 20)], continue)
               || {K, N} <- [{1, A}, {2, B}], T <- [counter, tally]],
    await(fun() -> lists:all(fun(Cl) -> acked(Cl) > 200 end, Clients) end, 20000),
    %% Every member writes to the primary (the standby takes no writes).
    ?assert(clients_of(?config(primary_port, Config)) >= 3),
    {0, _} = sh(script() ++ " kill " ++ ?config(primary_dir, Config)),
    T0 = erlang:monotonic_time(millisecond),
    {0, _} = sh(script() ++ " promote " ++ ?config(standby_dir, Config)),
    Before = [acked(Cl) || Cl <- Clients],
    await(fun() -> lists:all(fun({Cl, K}) -> acked(Cl) > K + 50 end, lists:zip(Clients, Before)) end,
          ?STORE_TIMEOUT_MS + 5000),
    ct:log("writes acknowledged again ~b ms after the primary was killed", [erlang:monotonic_time(millisecond) - T0]),
    Acked = lists:foldl(fun(Cl, Acc) -> maps:merge(Acc, stop_incrementer(Cl)) end, #{}, Clients),
    ct:log("~b entities, ~b acknowledged increments", [maps:size(Acked), lists:sum(maps:values(Acked))]),
    [?assertEqual([], lost(N, Acked)) || N <- All],
    %% Every member anew: what they answer comes from the new primary.
    [shardnode_ct:log_output(N) || N <- All],
    [ok = shardnode:stop_node(N) || N <- All],
    All2 = start_three(Config, "fo2", #{entities => #{tally => sn_tally}}),
    [?assertEqual([], lost(N, Acked)) || N <- All2].

%% The same with a standby that is not synchronous: the primary's last
%% commits may not have reached it when it dies, so acknowledged
%% increments may be lost (docs/contract.md says so), but the members find
%% the promoted standby all the same, writes go on within store_timeout_ms
%% plus a few seconds, and every counter reads through every member the
%% same value, which only goes up from there.
a_promoted_asynchronous_standby_takes_the_writes_on(Config) ->
    [A, B, _] = All = start_three(Config, "fa", #{}),
    Client = start_incrementer(A, counter, lists:seq(1, 30), continue),
    await(fun() -> acked(Client) > 200 end, 20000),
    {0, _} = sh(script() ++ " kill " ++ ?config(primary_dir, Config)),
    {0, _} = sh(script() ++ " promote " ++ ?config(standby_dir, Config)),
    Before = acked(Client),
    await(fun() -> acked(Client) > Before + 50 end, ?STORE_TIMEOUT_MS + 5000),
    Acked = stop_incrementer(Client),
    Lost = lists:sum([V - Got || {Id, V} <- maps:to_list(Acked), {ok, Got} <- [try_call(A, Id, get)], Got < V]),
    ct:log("acknowledged increments lost with the asynchronous standby: ~b of ~b",
           [Lost, lists:sum(maps:values(Acked))]),
    Values = [[try_call(N, Id, get) || Id <- lists:seq(1, 30)] || N <- All],
    ?assertEqual(1, length(lists:usort(Values)), "every member reads the same values"),
    ?assert(lists:all(fun({ok, V}) -> is_integer(V); (_) -> false end, hd(Values))),
    ?assertEqual([], [{Id, V, Again} || {Id, {ok, V}} <- lists:zip(lists:seq(1, 30), hd(Values)),
                                        {ok, Again} <- [try_call(B, Id, incr)], Again =/= V + 1]).

%% The primary freezes (SIGSTOP: its kernel still takes the bytes, no
%% reset comes, as for a machine that hangs) and the standby is promoted:
%% each member gives its connection up once the server has answered
%% nothing for store_timeout_ms with a statement out, its next attempt
%% hangs at the frozen host until connect_timeout and the one after
%% begins with the standby. A member with nothing out notices at its next
%% write, which may come only after the others' calls have timed out: so
%% writes go on within twice store_timeout_ms plus connect_timeout and a
%% few seconds (10.7 s measured with 3 s and 2 s), and every acknowledged
%% increment is read back through every member.
a_frozen_primary_is_left_for_the_promoted_standby(Config) ->
    [A, B, _] = All = start_three(Config, "fz", #{}),
    Clients = [start_incrementer(N, counter, [{K, counter, I} || I <- lists:seq(1, 20)], continue)
               || {K, N} <- [{1, A}, {2, B}]],
    await(fun() -> lists:all(fun(Cl) -> acked(Cl) > 100 end, Clients) end, 20000),
    {0, _} = sh(script() ++ " pause " ++ ?config(primary_dir, Config)),
    T0 = erlang:monotonic_time(millisecond),
    {0, _} = sh(script() ++ " promote " ++ ?config(standby_dir, Config)),
    Before = [acked(Cl) || Cl <- Clients],
    await(fun() -> lists:all(fun({Cl, K}) -> acked(Cl) > K + 50 end, lists:zip(Clients, Before)) end,
          2 * ?STORE_TIMEOUT_MS + 12000),
    ct:log("writes acknowledged again ~b ms after the primary froze", [erlang:monotonic_time(millisecond) - T0]),
    Acked = lists:foldl(fun(Cl, Acc) -> maps:merge(Acc, stop_incrementer(Cl)) end, #{}, Clients),
    [?assertEqual([], lost(N, Acked)) || N <- All].

%%====================================================================
%% Helpers
%%====================================================================

%% The counters whose value read through Node is below the last one
%% acknowledged (or that Node cannot read).
lost(Node, Acked) ->
    [{Id, V, Got} || {{_, T, _} = Id, V} <- lists:sort(maps:to_list(Acked)), Got <- [try_call(Node, T, Id, get)],
                     not (is_tuple(Got) andalso is_integer(element(2, Got)) andalso element(2, Got) >= V)].

%% How many client connections the server on Port serves.
clients_of(Port) ->
    {0, N} = sh(io_lib:format("psql -X -q -t -A -h 127.0.0.1 -p ~b -U postgres -d postgres -c "
                              "\"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                              "AND pid <> pg_backend_pid()\"", [Port])),
    ct:log("~s clients on ~b", [string:trim(N), Port]),
    list_to_integer(string:trim(N)).

%% Three members (the options opts/2 makes, with Extra), the first started
%% first and the others joining it; returned once each lists all three up.
start_three(Config, Prefix, Extra) ->
    Opts = [maps:merge(opts(Config, Prefix), Extra) || _ <- [a, b, c]],
    {[A], _} = shardnode_ct:start_nodes(Config, [hd(Opts)]),
    {[B, C], _} = shardnode_ct:start_nodes(Config, [O#{join => [A]} || O <- tl(Opts)]),
    All = [A, B, C],
    await(fun() -> lists:all(fun(X) -> members(X) =:= lists:sort(All) end, All) end, 20000),
    All.

%% A member whose conninfo names the primary and the standby, in that
%% order: libpq takes the first that accepts writes.
opts(Config, Prefix) ->
    Name = shardnode_ct:unique_name(Prefix),
    Conninfo = io_lib:format("host=127.0.0.1,127.0.0.1 port=~b,~b user=postgres dbname=postgres "
                             "target_session_attrs=read-write connect_timeout=2",
                             [?config(primary_port, Config), ?config(standby_port, Config)]),
    #{name => Name ++ "@127.0.0.1",
      config => #{number_of_shards => ?SHARDS, heartbeat_interval_ms => 200,
                  rebalance_interval_ms => 300, retry_interval_ms => 500, failure_timeout_ms => 1000,
                  stable_after_ms => 1000, state_store => postgres, store_timeout_ms => ?STORE_TIMEOUT_MS,
                  postgres_conninfo => lists:flatten(Conninfo),
                  data_dir => filename:join(?config(priv_dir, Config), Name)}}.

try_call(Node, Id, Msg) -> try_call(Node, counter, Id, Msg).

try_call(Node, Type, Id, Msg) ->
    try gen_server:call({Type, Node}, {Id, Msg}, 5000) of
        Reply -> {ok, Reply}
    catch
        exit:_ -> error
    end.

members(Node) ->
    case catch gen_server:call({shardnode, Node}, members, 2000) of
        {ok, Ms} -> lists:sort([X || #{node := X, status := up} <- Ms]);
        _ -> error
    end.

await(Fun, Ms) -> sn_test:await(Fun, Ms).

port(Out) -> list_to_integer(string:trim(Out)).

script() -> sn_test:pg_server_script().

sh(Cmd) -> sn_test:sh(Cmd).
