%% Entity states in PostgreSQL, `state_store = postgres' (docs/contract.md,
%% "Entity state"), against a real server the suite starts for itself
%% (scripts/pg-server.sh: initdb into a temporary directory, a free port on
%% 127.0.0.1) and stops. Each case has a database of its own.
%%
%%   rebar3 ct --dir test --suite shardnode_postgres_SUITE
-module(shardnode_postgres_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-import(sn_test, [call/3, start_incrementer/3, acked/1, stop_incrementer/1]).

-import(shardnode_ct, [pause/1, resume/1]).

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([ready_is_503_while_the_database_is_down/1]).
-export([a_restart_continues_every_entity/1,
         a_move_reads_the_states_from_the_database/1,
         a_killed_member_loses_no_acknowledged_increment/1,
         the_database_away_for_3_s_loses_nothing/1,
         the_database_away_past_store_timeout_fails_calls/1,
         a_whole_cluster_restart_keeps_every_value/1,
         a_paused_members_stale_write_is_refused/1,
         two_clusters_on_one_database_take_turns_never_both/1,
         a_crashed_singleton_continues_from_the_database/1,
         erlang_entities_through_join_leave_and_kill/1]).

-define(SHARDS, 30).

suite() -> [{timetrap, {minutes, 3}}].

all() ->
    [a_restart_continues_every_entity,
     a_move_reads_the_states_from_the_database,
     a_killed_member_loses_no_acknowledged_increment,
     the_database_away_for_3_s_loses_nothing,
     the_database_away_past_store_timeout_fails_calls,
     a_whole_cluster_restart_keeps_every_value,
     a_paused_members_stale_write_is_refused,
     two_clusters_on_one_database_take_turns_never_both,
     a_crashed_singleton_continues_from_the_database,
     erlang_entities_through_join_leave_and_kill,
     ready_is_503_while_the_database_is_down].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(shardnode),
    Dir = string:trim(os:cmd("mktemp -d -u /tmp/sn-pg-ct-XXXXXX")),
    case sh(script() ++ " start " ++ Dir) of
        {0, Port} -> [{pg_dir, Dir}, {pg_port, list_to_integer(string:trim(Port))} | Config];
        {_, Why} -> {skip, "cannot start a PostgreSQL server: " ++ Why}
    end.

end_per_suite(Config) ->
    {0, _} = sh(script() ++ " stop " ++ ?config(pg_dir, Config)),
    ?assertEqual([], shardnode:which_nodes()),
    ok.

init_per_testcase(Case, Config) ->
    Db = atom_to_list(Case),
    {0, _} = psql(Config, "postgres", "CREATE DATABASE " ++ Db),
    [{db, Db} | Config].

end_per_testcase(_Case, Config) ->
    sh(script() ++ " resume " ++ ?config(pg_dir, Config)),
    shardnode_ct:stop_all_nodes(Config).

%%====================================================================
%% Cases
%%====================================================================

%% 500 counters and 500 kv entities; the node is stopped and started again
%% (a new data_dir: nothing of it is kept on the node) and answers every
%% one with its value. The rows are readable from SQL, the state as
%% term_to_binary/1 wrote it.
a_restart_continues_every_entity(Config) ->
    Opts = opts(Config, "pg"),
    {[N], _} = shardnode_ct:start_nodes(Config, [Opts]),
    Ids = lists:seq(1, 500),
    [begin
         [_ = call(N, I, incr) || _ <- lists:seq(1, expected(I))],
         ok = gen_server:call({kv, N}, {I, {put, value, {I, <<"v">>}}})
     end || I <- Ids],
    ok = shardnode:stop_node(N),
    {[M], _} = shardnode_ct:start_nodes(Config, [opts(Config, "pg")]),
    Wrong = [I || I <- Ids, {call(M, I, get), gen_server:call({kv, M}, {I, {get, value}})}
                              =/= {expected(I), {ok, {I, <<"v">>}}}],
    ?assertEqual([], Wrong),
    {0, Hex} = psql(Config, ?config(db, Config),
                    "SELECT encode(state, 'hex') FROM shardnode_entity_state WHERE type = 'counter' "
                    "AND id = decode('" ++ hex(canonical(7)) ++ "', 'hex')"),
    ?assertEqual(hex(term_to_binary(expected(7))), string:trim(Hex)),
    ok = shardnode:stop_node(M).

%% A second member joins and takes shards: their entities continue there
%% with the values the first member wrote, read from the database (no
%% state is streamed), also the ones passivated before the move.
a_move_reads_the_states_from_the_database(Config) ->
    {[A], _} = shardnode_ct:start_nodes(Config, [opts(Config, "pg")]),
    Ids = lists:seq(1, 300),
    [[_ = call(A, I, incr) || _ <- lists:seq(1, expected(I))] || I <- Ids],
    [ok = call(A, I, passivate) || I <- lists:seq(1, 300, 2)],
    {[B], _} = shardnode_ct:start_nodes(Config, [(opts(Config, "pg"))#{join => [A]}]),
    await(fun() -> balanced([shard_count(X) || X <- [A, B]]) end),
    ?assert(shard_count(B) >= ?SHARDS div 2 - 1),
    ?assertEqual([], [{I, V} || I <- Ids, V <- [call(B, I, get)], V =/= expected(I)]),
    ?assertEqual([], [{I, V} || I <- Ids, V <- [call(A, I, incr)], V =/= expected(I) + 1]).

%% Three members; two clients increment their counters through A and B as
%% fast as they are answered, remembering each acknowledged value; C is
%% killed with SIGKILL meanwhile. Once it is downed and its shards have
%% moved, every counter holds at least its last acknowledged value — at
%% most one more, an increment committed whose reply was cut off.
a_killed_member_loses_no_acknowledged_increment(Config) ->
    [OA, OB, OC] = [opts(Config, "pg") || _ <- [a, b, c]],
    {[A], _} = shardnode_ct:start_nodes(Config, [OA]),
    {[B, C], _} = shardnode_ct:start_nodes(Config, [OB#{join => [A]}, OC#{join => [A]}]),
    await(fun() -> lists:all(fun(X) -> members(X) =:= lists:sort([A, B, C]) end, [A, B, C]) end),
    %% Shards are allocated on first use: these spread them over all three.
    [_ = call(A, I, get) || I <- lists:seq(1, 200)],
    await(fun() -> shard_count(C) > 0 end),
    Clients = [start_incrementer(X, [K * 1000 + I || I <- lists:seq(1, 40)], continue) || {K, X} <- [{1, A}, {2, B}]],
    await(fun() -> lists:all(fun(Cl) -> acked(Cl) > 300 end, Clients) end),
    ok = shardnode:kill_node(C),
    await(fun() -> members(A) =:= lists:sort([A, B]) andalso shard_count(A) + shard_count(B) =:= ?SHARDS end),
    timer:sleep(500),
    Acked = lists:foldl(fun(Cl, Acc) -> maps:merge(Acc, stop_incrementer(Cl)) end, #{}, Clients),
    Lost = [{Id, V, Got} || {Id, V} <- maps:to_list(Acked), Got <- [call(A, Id, get)], Got < V],
    ct:log("~b counters, ~b acknowledged increments", [maps:size(Acked), lists:sum(maps:values(Acked))]),
    ?assertEqual([], Lost).

%% The server is paused (SIGSTOP) for 3 s while a client increments:
%% each call gets its value or {error, store_unavailable}, none is lost
%% or applied twice; once the server is back, the node goes on by itself.
the_database_away_for_3_s_loses_nothing(Config) ->
    {[N], _} = shardnode_ct:start_nodes(Config, [opts(Config, "pg")]),
    Client = start_incrementer(N, lists:seq(1, 20), continue),
    await(fun() -> acked(Client) > 100 end),
    {0, _} = sh(script() ++ " pause " ++ ?config(pg_dir, Config)),
    timer:sleep(3000),
    {0, _} = sh(script() ++ " resume " ++ ?config(pg_dir, Config)),
    Before = acked(Client),
    await(fun() -> acked(Client) > Before + 100 end),
    Acked = stop_incrementer(Client),
    Wrong = [{Id, V, Got} || {Id, V} <- maps:to_list(Acked), Got <- [call(N, Id, get)], Got < V],
    ?assertEqual([], Wrong).

%% With store_timeout_ms at 1 s, the server paused for 3 s: a call whose
%% change was never sent to the server gets {error, store_unavailable},
%% and its change is not applied (a caller may try it again); one whose
%% commit was on its way to the paused server gets {error, unconfirmed}:
%% it may land once the server is back. Read back after the server
%% returns, each counter holds its acknowledged increments, plus one for
%% an unconfirmed call at most, never for a store_unavailable one.
the_database_away_past_store_timeout_fails_calls(Config) ->
    Opts = opts(Config, "pg"),
    Short = Opts#{config => (maps:get(config, Opts))#{store_timeout_ms => 1000}},
    {[N], _} = shardnode_ct:start_nodes(Config, [Short]),
    [1 = call(N, I, incr) || I <- lists:seq(1, 10)],
    {0, _} = sh(script() ++ " pause " ++ ?config(pg_dir, Config)),
    Results = [catch gen_server:call({counter, N}, {I, incr}, 10000) || I <- lists:seq(1, 4)],
    {0, _} = sh(script() ++ " resume " ++ ?config(pg_dir, Config)),
    ?assertEqual([], [R || R <- Results, R =/= {error, store_unavailable}, R =/= {error, unconfirmed}]),
    %% The first call's transaction was sent before the server stopped
    %% answering; the node has at most two out, so the last call's never
    %% left.
    ?assertEqual({error, unconfirmed}, hd(Results)),
    ?assertEqual({error, store_unavailable}, lists:last(Results)),
    Got = [call(N, I, get) || I <- lists:seq(1, 4)],
    ct:log("replies ~p; after the outage: ~p", [Results, Got]),
    ?assertEqual([], [{I, R, V} || {I, R, V} <- lists:zip3(lists:seq(1, 4), Results, Got),
                                   not (V =:= 1 orelse (V =:= 2 andalso R =:= {error, unconfirmed}))]),
    %% The store goes on by itself.
    await(fun() -> is_integer(catch gen_server:call({counter, N}, {9, incr}, 2000)) end),
    ?assertEqual(2, call(N, 10, incr)).

%% Three members written to, all stopped, three new members (new names, new
%% data_dirs) started on the same database: every value is there.
a_whole_cluster_restart_keeps_every_value(Config) ->
    Start = fun() ->
                    [OA, OB, OC] = [opts(Config, "pg") || _ <- [a, b, c]],
                    {[A], _} = shardnode_ct:start_nodes(Config, [OA]),
                    {[B, C], _} = shardnode_ct:start_nodes(Config, [OB#{join => [A]}, OC#{join => [A]}]),
                    await(fun() -> lists:all(fun(X) -> members(X) =:= lists:sort([A, B, C]) end, [A, B, C]) end),
                    [A, B, C]
            end,
    Ids = lists:seq(1, 300),
    Nodes = Start(),
    [[_ = call(lists:nth(1 + I rem 3, Nodes), I, incr) || _ <- lists:seq(1, expected(I))] || I <- Ids],
    [ok = shardnode:stop_node(X) || X <- lists:reverse(Nodes)],
    [A2 | _] = Start(),
    ?assertEqual([], [{I, V} || I <- Ids, V <- [call(A2, I, get)], V =/= expected(I)]).

%% Fencing. C's connection to the database runs through a relay the test
%% holds: C takes an increment, and its write transaction waits in the
%% relay while C is paused (SIGSTOP). A and B down C, the counter's shard
%% gets a new home, which claims it and increments the counter further.
%% Then the relay lets C's transaction through: the database refuses it,
%% and the counter keeps the new home's value (without fencing C's stale
%% value would overwrite it). Woken, C never answers the call with a value.
a_paused_members_stale_write_is_refused(Config) ->
    {Relay, RelayPort} = start_relay(?config(pg_port, Config)),
    [OA, OB, OC] = [opts(Config, "pg") || _ <- [a, b, c]],
    {[A], _} = shardnode_ct:start_nodes(Config, [OA]),
    {[B, C], _} = shardnode_ct:start_nodes(Config, [OB#{join => [A]},
                                                    (opts(Config, "pg", RelayPort))#{join => [A]}]),
    _ = OC,
    await(fun() -> lists:all(fun(X) -> members(X) =:= lists:sort([A, B, C]) end, [A, B, C]) end),
    [_ = call(A, I, get) || I <- lists:seq(1, 200)],
    await(fun() -> shard_count(C) > 0 end),
    [Id | _] = [I || I <- lists:seq(1, 200), hosts(C, I)],
    [1, 2, 3] = [call(C, Id, incr) || _ <- [1, 2, 3]],
    ok = relay(Relay, hold),
    Self = self(),
    spawn(fun() -> Self ! {late, catch gen_server:call({counter, C}, {Id, incr}, 60000)} end),
    await(fun() -> relay(Relay, held_bytes) > 0 end),
    pause(C),
    await(fun() -> members(A) =:= lists:sort([A, B]) andalso members(B) =:= lists:sort([A, B]) end),
    %% The new home reads what was committed: C's fourth increment is not.
    await(fun() -> try_call(A, Id, get) =:= {ok, 3} end),
    [4, 5, 6] = [call(B, Id, incr) || _ <- [1, 2, 3]],
    Back = relay(Relay, back_bytes),
    ok = relay(Relay, release),
    %% The server answers C's transaction (C, paused, does not read it).
    await(fun() -> relay(Relay, back_bytes) > Back end),
    ?assertEqual(hex(term_to_binary(6)), stored(Config, Id)),
    resume(C),
    receive
        {late, V} when is_integer(V) -> ct:fail({stale_reply, V});
        {late, Other} -> ct:log("the call C took ended with ~p", [Other])
    after 30000 -> ct:fail(late_call_never_ended)
    end,
    ?assertEqual(6, call(A, Id, get)),
    ?assertEqual(7, call(B, Id, incr)),
    ?assertEqual(hex(term_to_binary(7)), stored(Config, Id)).

%% Split brain at its worst: two single-member clusters on one database
%% (each its own coordinator), both serving one counter. Whichever claimed
%% its shard last writes; the other's next write is refused — that call
%% gets {error, store_unavailable} — and its shard stops there; the
%% member's own coordinator gives it back, so the next call claims it
%% again and continues from the stored value. The values acknowledged,
%% on either side, only ever go up.
two_clusters_on_one_database_take_turns_never_both(Config) ->
    {[X], _} = shardnode_ct:start_nodes(Config, [opts(Config, "pg")]),
    {[Y], _} = shardnode_ct:start_nodes(Config, [opts(Config, "pg")]),
    ?assertEqual([1, 2, 3], [call(X, 7, incr) || _ <- [1, 2, 3]]),
    ?assertEqual(4, call(Y, 7, incr)),
    ?assertEqual({error, store_unavailable}, call(X, 7, incr)),
    ?assertEqual(5, call(X, 7, incr)),
    ?assertEqual({error, store_unavailable}, call(Y, 7, incr)),
    ?assertEqual([6, 7], [call(Y, 7, incr) || _ <- [1, 2]]),
    ?assertEqual(hex(term_to_binary(7)), stored(Config, 7)),
    {ok, Lines} = shardnode:output(X),
    ?assert(lists:any(fun(L) -> binary:match(L, <<"another member claimed it">>) =/= nomatch end, Lines)).

%%====================================================================
%% Helpers
%%====================================================================

%% The cluster singleton boss (a counter) runs on A, the oldest of three.
%% A is killed with SIGKILL: once it is downed, B, the next oldest, starts
%% the instance from the database, so it continues from the last
%% acknowledged value (Akka's singleton would start afresh).
a_crashed_singleton_continues_from_the_database(Config) ->
    [OA, OB, OC] = [(opts(Config, "pg"))#{singletons => [{boss, counter}]} || _ <- [a, b, c]],
    {[A], _} = shardnode_ct:start_nodes(Config, [OA]),
    {[B, C], _} = shardnode_ct:start_nodes(Config, [OB#{join => [A]}, OC#{join => [A]}]),
    Up = lists:sort([A, B, C]),
    await(fun() -> lists:all(fun(X) -> members(X) =:= Up end, [A, B, C]) end),
    ?assertEqual({ok, A}, gen_server:call({shardnode, C}, {singleton, boss})),
    ?assertEqual(lists:seq(1, 30), [gen_server:call({boss, X}, incr, 10000) || _ <- lists:seq(1, 10), X <- [A, B, C]]),
    ok = shardnode:kill_node(A),
    await(fun() -> {ok, B} =:= gen_server:call({shardnode, C}, {singleton, boss}) end),
    Next = fun() ->
                   try gen_server:call({boss, C}, incr, 2000) of V -> {ok, V}
                   catch exit:_ -> false
                   end
           end,
    ?assertEqual({ok, 31}, shardnode_poll:value(Next, 20000)),
    ?assertEqual(32, gen_server:call({boss, B}, incr, 10000)).

%% An Erlang type (sn_tally, hosted by this node for every member) and the
%% C counter: clients increment through every member while a fourth joins,
%% one leaves and one is killed with SIGKILL. Every counter ends at its
%% last acknowledged value or one more (a commit whose reply was cut
%% off), no acknowledged value ever went back, and no tally ran twice at
%% once: the host ended a member's processes before another took them.
erlang_entities_through_join_leave_and_kill(Config) ->
    Recorder = sn_test:start_instance_recorder(),
    try
        Opts = fun() -> (opts(Config, "pge"))#{entities => #{tally => sn_tally}} end,
        [OA, OB, OC, OD] = [Opts() || _ <- [a, b, c, d]],
        {[A], _} = shardnode_ct:start_nodes(Config, [OA]),
        {[B, C], _} = shardnode_ct:start_nodes(Config, [OB#{join => [A]}, OC#{join => [A]}]),
        await(fun() -> lists:all(fun(X) -> members(X) =:= lists:sort([A, B, C]) end, [A, B, C]) end),
        Clients = [{X, sn_test:start_incrementer(X, T, [{X, T, K} || K <- lists:seq(1, 20)], continue)}
                   || X <- [A, B, C], T <- [tally, counter]],
        Progress = fun(Which, N) ->
                           Before = [{Cl, acked(Cl)} || {X, Cl} <- Clients, lists:member(X, Which)],
                           await(fun() -> lists:all(fun({Cl, K}) -> acked(Cl) > K + N end, Before) end)
                   end,
        Progress([A, B, C], 50),
        {[D], _} = shardnode_ct:start_nodes(Config, [OD#{join => [A]}]),
        await(fun() -> tally_shards(D) > 0 end),
        Progress([A, B, C], 50),
        ok = shardnode:stop_node(B),
        Progress([A, C], 50),
        ok = shardnode:kill_node(C),
        await(fun() -> members(A) =:= lists:sort([A, D]) end),
        Progress([A], 50),
        Acked = lists:foldl(fun({_, Cl}, Acc) -> maps:merge(Acc, stop_incrementer(Cl)) end, #{}, Clients),
        ct:log("~b entities, ~b acknowledged increments", [maps:size(Acked), lists:sum(maps:values(Acked))]),
        Wrong = [{Id, V, Got} || {{_, T, _} = Id, V} <- maps:to_list(Acked),
                                 Got <- [sn_test:call(A, T, Id, get)], Got < V orelse Got > V + 1],
        ?assertEqual([], Wrong),
        ?assertEqual([], sn_test:second_instances(Recorder))
    after
        exit(Recorder, kill)
    end.

tally_shards(Node) ->
    case catch gen_server:call({tally, Node}, get_shard_region_state, 2000) of
        {ok, State} -> maps:size(State);
        _ -> 0
    end.

%% docs/contract.md "Health": a node whose PostgreSQL server stops is no
%% longer ready (503, the reason naming the store) while still live; with
%% the server back, ready again, and its entities answer.
ready_is_503_while_the_database_is_down(Config) ->
    Port = shardnode_ct:free_port(),
    Opts = opts(Config, "pg"),
    {[N], _} = shardnode_ct:start_nodes(Config, [deep_put(Opts, metrics_port, Port)]),
    await(fun() -> sn_test:http_get(Port, "/health/ready") =:= {200, <<"ok\n">>} end),
    1 = call(N, 1, incr),
    {0, _} = sh(script() ++ " halt " ++ ?config(pg_dir, Config)),
    await(fun() -> element(1, sn_test:http_get(Port, "/health/ready")) =:= 503 end),
    {503, Why} = sn_test:http_get(Port, "/health/ready"),
    ?assertMatch({_, _}, binary:match(Why, <<"store: the PostgreSQL server is not connected">>)),
    {200, <<"ok\n">>} = sn_test:http_get(Port, "/health/live"),
    {0, _} = sh(script() ++ " start " ++ ?config(pg_dir, Config)),
    await(fun() -> sn_test:http_get(Port, "/health/ready") =:= {200, <<"ok\n">>} end),
    await(fun() -> try_call(N, 1, get) =:= {ok, 1} end),
    2 = call(N, 1, incr).

deep_put(#{config := C} = Opts, K, V) -> Opts#{config := C#{K => V}}.

expected(I) -> 1 + I rem 7.

opts(Config, Prefix) ->
    opts(Config, Prefix, ?config(pg_port, Config)).

%% A member whose connection goes to `Port' (the server's, or a relay's).
opts(Config, Prefix, Port) ->
    Name = shardnode_ct:unique_name(Prefix),
    Conninfo = io_lib:format("host=127.0.0.1 port=~b user=postgres dbname=~s",
                             [Port, ?config(db, Config)]),
    #{name => Name ++ "@127.0.0.1",
      config => #{number_of_shards => ?SHARDS, heartbeat_interval_ms => 200,
                  rebalance_interval_ms => 300, retry_interval_ms => 500, failure_timeout_ms => 1000,
                  stable_after_ms => 1000, state_store => postgres,
                  postgres_conninfo => lists:flatten(Conninfo),
                  data_dir => filename:join(?config(priv_dir, Config), Name)}}.

%% A call that may find its shard moving: {ok, Reply} or error.
try_call(Node, Id, Msg) ->
    try gen_server:call({counter, Node}, {Id, Msg}, 1000) of
        Reply -> {ok, Reply}
    catch
        exit:_ -> error
    end.

hosts(Node, Id) ->
    {ok, State} = gen_server:call({counter, Node}, get_shard_region_state),
    maps:is_key(erlang:phash2(Id, ?SHARDS), State).




%% The counter's stored state, in hex, as the database holds it.
stored(Config, Id) ->
    {0, Hex} = psql(Config, ?config(db, Config),
                    "SELECT encode(state, 'hex') FROM shardnode_entity_state WHERE type = 'counter' "
                    "AND id = decode('" ++ hex(canonical(Id)) ++ "', 'hex')"),
    string:trim(Hex).

%% A TCP relay between members and the server, run by the test (not a mock:
%% the bytes are the real protocol's, passed on untouched). Told to hold,
%% it keeps what members send until told to release, so the server sees
%% a transaction late; it counts the bytes the server sends back.
start_relay(ServerPort) ->
    {ok, L} = gen_tcp:listen(0, [binary, {active, false}, {ip, {127, 0, 0, 1}}]),
    {ok, Port} = inet:port(L),
    Ctl = spawn(fun() -> relay_loop(ServerPort, #{pairs => [], hold => false, held => [], back => 0}) end),
    ok = gen_tcp:controlling_process(L, Ctl),
    spawn(fun() -> relay_accept(L, Ctl) end),
    {Ctl, Port}.

relay_accept(L, Ctl) ->
    case gen_tcp:accept(L) of
        {ok, S} ->
            ok = gen_tcp:controlling_process(S, Ctl),
            Ctl ! {accepted, S},
            relay_accept(L, Ctl);
        {error, _} -> ok
    end.

relay_loop(ServerPort, St = #{pairs := Pairs, hold := Hold, held := Held, back := Back}) ->
    receive
        {accepted, S} ->
            {ok, P} = gen_tcp:connect({127, 0, 0, 1}, ServerPort, [binary, {active, true}]),
            ok = inet:setopts(S, [{active, true}]),
            relay_loop(ServerPort, St#{pairs := [{S, P} | Pairs]});
        {tcp, Sock, Data} ->
            case {lists:keyfind(Sock, 1, Pairs), lists:keyfind(Sock, 2, Pairs)} of
                {{_, P}, _} when Hold -> relay_loop(ServerPort, St#{held := [{P, Data} | Held]});
                {{_, P}, _} -> gen_tcp:send(P, Data), relay_loop(ServerPort, St);
                {false, {S, _}} ->
                    gen_tcp:send(S, Data),
                    relay_loop(ServerPort, St#{back := Back + byte_size(Data)});
                _ -> relay_loop(ServerPort, St)
            end;
        {tcp_closed, Sock} ->
            [begin gen_tcp:close(S), gen_tcp:close(P) end
             || {S, P} <- Pairs, Sock =:= S orelse Sock =:= P],
            relay_loop(ServerPort, St#{pairs := [X || X = {S, P} <- Pairs, Sock =/= S, Sock =/= P]});
        {hold, From} -> From ! {relay, ok}, relay_loop(ServerPort, St#{hold := true});
        {release, From} ->
            [gen_tcp:send(P, Data) || {P, Data} <- lists:reverse(Held)],
            From ! {relay, ok},
            relay_loop(ServerPort, St#{hold := false, held := []});
        {held_bytes, From} ->
            From ! {relay, lists:sum([byte_size(D) || {_, D} <- Held])},
            relay_loop(ServerPort, St);
        {back_bytes, From} -> From ! {relay, Back}, relay_loop(ServerPort, St)
    end.

relay(Ctl, What) ->
    Ctl ! {What, self()},
    receive {relay, Answer} -> Answer after 5000 -> ct:fail(relay_silent) end.

shard_count(Node) ->
    case catch gen_server:call({counter, Node}, get_shard_region_state, 2000) of
        {ok, State} -> maps:size(State);
        _ -> 0
    end.

balanced(Counts) ->
    lists:max(Counts) - lists:min(Counts) =< 1.

members(Node) ->
    case catch gen_server:call({shardnode, Node}, members, 2000) of
        {ok, Ms} -> lists:sort([X || #{node := X, status := up} <- Ms]);
        _ -> error
    end.

await(Fun) -> sn_test:await(Fun, 20000).

script() -> sn_test:pg_server_script().

psql(Config, Db, Sql) ->
    sh(io_lib:format("psql -X -q -t -A -h 127.0.0.1 -p ~b -U postgres -d ~s -c \"~s\"",
                     [?config(pg_port, Config), Db, Sql])).

%% An integer id's canonical form: its external term format without the
%% version byte.
canonical(Term) ->
    <<131, Rest/binary>> = term_to_binary(Term),
    Rest.

hex(Bin) -> lists:flatten([io_lib:format("~2.16.0b", [B]) || <<B>> <= Bin]).

sh(Cmd) -> sn_test:sh(Cmd).
