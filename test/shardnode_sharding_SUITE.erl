%% Cluster sharding on one C node, driven from a BEAM node with nothing but
%% gen_server:call/3 and `!': entities are created on first message, keep
%% their state, are placed in shard erlang:phash2(EntityId, NumberOfShards),
%% passivate on request and when idle, and every malformed input gets an
%% error reply while the node keeps serving.
%%
%%   rebar3 ct --dir test --suite shardnode_sharding_SUITE
-module(shardnode_sharding_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-import(sn_test, [call/4]).

-export([all/0, groups/0, suite/0,
         init_per_suite/1, end_per_suite/1,
         init_per_group/2, end_per_group/2,
         init_per_testcase/2, end_per_testcase/2]).

-export([put_terms/4, read_back_whole/4]).
-export([counters_exact_values/1,
         cast_is_a_tell_without_a_reply/1,
         tell_replies_to_sender/1,
         tell_order_kept/1,
         kv_operations/1,
         made_up_identifiers_never_reach_their_node/1,
         echo_returns_message/1,
         region_state_places_ids/1,
         cluster_stats_count_entities/1,
         passivate_restarts_at_zero/1,
         unknown_message_error/1,
         bad_entity_id_error/1,
         bad_request_error/1,
         equal_ids_one_entity/1,
         hundred_thousand_entities/1,
         idle_passivation/1,
         overloaded_when_buffer_full/1,
         graceful_shutdown_unregisters/1,
         million_ids_flood_bounded/1,
         plugin_entity_type/1,
         remembered_entities_survive_a_restart/1,
         sys_answers_at_once/1,
         counters_are_integers_of_any_size/1]).

-define(N_SHARDS, 100).

suite() ->
    [{timetrap, {minutes, 3}}].

all() ->
    [{group, shared_node}, {group, own_node}].

groups() ->
    [{shared_node, [],
      [counters_exact_values,
       cast_is_a_tell_without_a_reply,
       sys_answers_at_once,
       counters_are_integers_of_any_size,
       tell_replies_to_sender,
       tell_order_kept,
       kv_operations,
       made_up_identifiers_never_reach_their_node,
       echo_returns_message,
       region_state_places_ids,
       cluster_stats_count_entities,
       passivate_restarts_at_zero,
       unknown_message_error,
       bad_entity_id_error,
       bad_request_error,
       equal_ids_one_entity,
       hundred_thousand_entities]},
     {own_node, [],
      [idle_passivation,
       overloaded_when_buffer_full,
       graceful_shutdown_unregisters,
       million_ids_flood_bounded,
       plugin_entity_type,
       remembered_entities_survive_a_restart]}].

%% gen_server:cast({counter, N}, {Id, Msg}) is a tell whose reply is
%% dropped: the counter counts, and nothing comes back to the caster (the
%% call after it, on the same path, is answered after anything the cast
%% could have sent). A cast that is not {Id, Msg} changes nothing.
cast_is_a_tell_without_a_reply(Config) ->
    N = ?config(cnode, Config),
    Id = <<"cast-1">>,
    [ok = gen_server:cast({counter, N}, {Id, incr}) || _ <- lists:seq(1, 5)],
    ok = gen_server:cast({counter, N}, {Id, {incr, 10}}),
    ?assertEqual(15, gen_server:call({counter, N}, {Id, get})),
    ok = gen_server:cast({counter, N}, not_a_pair),
    ?assertEqual(15, gen_server:call({counter, N}, {Id, get})),
    ?assertEqual([], [M || {messages, Ms} <- [process_info(self(), messages)], M <- Ms]).

%% sys:get_state/get_status on a region and on the admin answer with
%% their statistics and settings; any other system message is an error at
%% once (these have a timeout of 1 s: a wait would fail the case).
sys_answers_at_once(Config) ->
    N = ?config(cnode, Config),
    _ = gen_server:call({counter, N}, {<<"sys-1">>, incr}),
    State = sys:get_state({counter, N}, 1000),
    ?assertMatch(#{type := counter, node := N, registered := true, coordinator := N,
                   stats := #{entities := E, delivered := D},
                   settings := #{number_of_shards := ?N_SHARDS, remember_entities := false,
                                 state_store := memory}}
                   when E >= 1 andalso D >= 1, State),
    {status, Pid, {module, shardnode_region}, [_, running, _, _, Misc]} = sys:get_status({counter, N}, 1000),
    ?assertEqual(N, node(Pid)),
    ?assertEqual([State], [S || {data, Items} <- Misc, {"State", S} <- Items]),
    ?assertMatch(#{node := N, members := [#{node := N, status := up}], shard_types := [_ | _],
                   log_level := _}, sys:get_state({shardnode, N}, 1000)),
    ?assertMatch({status, _, {module, shardnode_admin}, _}, sys:get_status({shardnode, N}, 1000)),
    ?assertEqual({error, {not_supported, suspend}}, sys:suspend({counter, N}, 1000)),
    ?assertEqual({error, {not_supported, resume}}, sys:resume({shardnode, N}, 1000)),
    ?assertError({not_supported, {replace_state, _}}, sys:replace_state({counter, N}, fun(S) -> S end, 1000)),
    ?assertMatch({error, {not_supported, _}}, sys:statistics({counter, N}, get, 1000)),
    %% the region still serves
    ?assertEqual(2, gen_server:call({counter, N}, {<<"sys-1">>, incr})).

%% A counter is a BEAM integer: past 2^63 it goes on (a bignum), {incr, N}
%% takes any integer, and a run of random increments of every size agrees
%% with the BEAM's own arithmetic.
counters_are_integers_of_any_size(Config) ->
    N = ?config(cnode, Config),
    Call = fun(Id, Msg) -> gen_server:call({counter, N}, {Id, Msg}) end,
    ?assertEqual(9223372036854775807, Call(big, {incr, 9223372036854775807})),
    ?assertEqual(9223372036854775808, Call(big, incr)),
    ?assertEqual(9223372036854775807, Call(big, decr)),
    Huge = 1 bsl 300,
    ?assertEqual(Huge + 9223372036854775807, Call(big, {incr, Huge})),
    ?assertEqual(9223372036854775807 - Huge, Call(big, {incr, -2 * Huge})),
    ?assertEqual(-Huge, Call(big, {incr, -9223372036854775807})),
    ?assertEqual(0, Call(big, {incr, Huge})),
    ?assertMatch({error, {unknown_message, {incr, 1.5}}}, Call(big, {incr, 1.5})),
    rand:seed(exsss, {1, 2, 3}),
    Final = lists:foldl(fun(_, Acc) ->
                                Bits = rand:uniform(200),
                                D = (rand:uniform(1 bsl Bits) - 1) * (2 * rand:uniform(2) - 3),
                                ?assertEqual(Acc + D, Call(random, {incr, D})),
                                Acc + D
                        end, 0, lists:seq(1, 2000)),
    ?assertEqual(Final, Call(random, get)),
    %% a tell's reply carries the bignum too
    {counter, N} ! {big, {incr, Huge * Huge}},
    receive {counter, big, V} -> ?assertEqual(Huge * Huge, V) after 5000 -> ct:fail(no_tell_reply) end.

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(shardnode),
    Config.

end_per_suite(_Config) ->
    ?assertEqual([], shardnode:which_nodes()),
    ok.

init_per_group(shared_node, Config) ->
    {[CNode], Config1} = shardnode_ct:start_nodes(Config, [#{}]),
    [{cnode, CNode} | Config1];
init_per_group(_, Config) ->
    Config.

end_per_group(shared_node, Config) ->
    shardnode_ct:stop_nodes(Config);
end_per_group(_, _Config) ->
    ok.

init_per_testcase(Case, Config) ->
    case own_node(Case) of
        none ->
            Config;
        Opts ->
            {[CNode], Config1} = shardnode_ct:start_nodes(Config, [Opts]),
            [{cnode, CNode} | Config1]
    end.

end_per_testcase(Case, Config) ->
    case own_node(Case) of
        none -> ok;
        _ -> shardnode_ct:stop_nodes(Config)
    end.

own_node(idle_passivation) -> #{config => #{passivate_idle_after_ms => 300}};
own_node(overloaded_when_buffer_full) -> #{config => #{buffer_size => 0}};
own_node(graceful_shutdown_unregisters) -> #{};
own_node(million_ids_flood_bounded) -> #{config => #{passivate_idle_after_ms => 200}};
own_node(plugin_entity_type) ->
    #{types => [counter, account],
      config => #{plugin_dir => examples_dir()}};
own_node(remembered_entities_survive_a_restart) -> none; %% starts its own, twice
own_node(_) -> none.

%%====================================================================
%% Cases
%%====================================================================

%% Thousands of counters, driven by concurrent clients, end with exactly
%% the values the clients computed.
counters_exact_values(Config) ->
    C = ?config(cnode, Config),
    Ids = [{ctr, N} || N <- lists:seq(1, 2000)],
    Parent = self(),
    Workers = [spawn_link(fun() -> Parent ! {self(), drive(C, Slice)} end)
               || Slice <- slices(Ids, 8)],
    Expected = lists:append([receive {W, Exp} -> Exp end || W <- Workers]),
    [?assertEqual(Value, call(C, counter, Id, get)) || {Id, Value} <- Expected],
    ok.

drive(C, Ids) ->
    [begin
         N = erlang:phash2(Id, 7),
         [call(C, counter, Id, incr) || _ <- lists:seq(1, N)],
         ?assertEqual(N - 1, call(C, counter, Id, decr)),
         ?assertEqual(N + 9, call(C, counter, Id, {incr, 10})),
         {Id, N + 9}
     end || Id <- Ids].

%% `{Type, Node} ! {EntityId, Msg}' sends the reply to the sender as
%% {Type, EntityId, Reply}.
tell_replies_to_sender(Config) ->
    C = ?config(cnode, Config),
    {counter, C} ! {<<"told">>, incr},
    ?assertEqual({counter, <<"told">>, 1}, receive_reply(counter, <<"told">>)),
    {echo, C} ! {[1, 2], hello},
    ?assertEqual({echo, [1, 2], hello}, receive_reply(echo, [1, 2])),
    ok.

%% Ten thousand tells from one sender to one entity arrive in the order
%% sent: the echo entity answers each with its sequence number.
tell_order_kept(Config) ->
    C = ?config(cnode, Config),
    N = 10000,
    [{echo, C} ! {ordered, {seq, I}} || I <- lists:seq(1, N)],
    Got = [receive {echo, ordered, {seq, S}} -> S after 10000 -> timeout end
           || _ <- lists:seq(1, N)],
    ?assertEqual(lists:seq(1, N), Got),
    [{counter, C} ! {order_ctr, incr} || _ <- lists:seq(1, N)],
    Last = lists:last([receive {counter, order_ctr, V} -> V after 10000 -> timeout end
                       || _ <- lists:seq(1, N)]),
    ?assertEqual(N, Last),
    ok.

kv_operations(Config) ->
    C = ?config(cnode, Config),
    Id = {user, 42},
    ?assertEqual({error, not_found}, call(C, kv, Id, {get, name})),
    ?assertEqual(ok, call(C, kv, Id, {put, name, <<"Ada">>})),
    ?assertEqual(ok, call(C, kv, Id, {put, #{k => [1]}, {any, term}})),
    ?assertEqual({ok, <<"Ada">>}, call(C, kv, Id, {get, name})),
    ?assertEqual({ok, {any, term}}, call(C, kv, Id, {get, #{k => [1]}})),
    ?assertEqual(ok, call(C, kv, Id, {put, name, <<"Grace">>})),
    ?assertEqual({ok, <<"Grace">>}, call(C, kv, Id, {get, name})),
    ?assertEqual(lists:sort([name, #{k => [1]}]), lists:sort(call(C, kv, Id, keys))),
    ?assertEqual(ok, call(C, kv, Id, {delete, name})),
    ?assertEqual(ok, call(C, kv, Id, {delete, name})),
    ?assertEqual({error, not_found}, call(C, kv, Id, {get, name})),
    ?assertEqual([#{k => [1]}], call(C, kv, Id, keys)),
    ok.

%% A stored value may hold a pid, reference or port that names another
%% node with numbers that node never made (found by fuzzing): a writer
%% node, to which they name a remote node, makes them up for this test
%% node with its name and creation. Handed to this node as they are, its
%% runtime would drop its connection to the C node on reading them; the C
%% node answers {error, unreadable_reply} instead, to calls and tells, and
%% the connection stays up. The writer reads them back whole, and this
%% node its own real pid and reference.
made_up_identifiers_never_reach_their_node(Config) ->
    C = ?config(cnode, Config),
    ok = net_kernel:monitor_nodes(true, [{node_type, all}]),
    {ok, Peer, W} = shardnode_ct:start_peer(Config, #{args => ["-pa", filename:dirname(code:which(?MODULE))]}),
    Me = atom_to_binary(node()),
    Cre = erlang:system_info(creation),
    Name = <<119, (byte_size(Me)), Me/binary>>,
    MadeUp = [<<131, 88, Name/binary, 32768:32, 0:32, Cre:32>>,                % pid number 2^15
              <<131, 88, Name/binary, 0:32, 8192:32, Cre:32>>,                 % pid serial 2^13
              <<131, 90, 3:16, Name/binary, Cre:32, (1 bsl 18):32, 0:64>>,     % reference, first word 2^18
              <<131, 90, 4:16, Name/binary, Cre:32, 1:32, 0:96>>,              % reference of four words
              <<131, 89, Name/binary, (1 bsl 28):32, Cre:32>>,                  % port number 2^28
              <<131, 104, 2, 100, 0, 4, "deep", 108, 1:32, 88, Name/binary, 32768:32, 0:32, Cre:32, 106>>],
    Id = made_up,
    Keys = lists:seq(1, length(MadeUp)),
    ok = erpc:call(W, ?MODULE, put_terms, [C, Id, Keys, MadeUp]),
    [?assertEqual({error, unreadable_reply}, call(C, kv, Id, {get, K})) || K <- Keys],
    [{kv, C} ! {Id, {get, K}} || K <- Keys],
    [?assertEqual({kv, Id, {error, unreadable_reply}}, receive_reply(kv, Id)) || _ <- Keys],
    %% Read by the node that wrote them, they are whole.
    ?assertEqual(length(Keys), erpc:call(W, ?MODULE, read_back_whole, [C, Id, Keys, MadeUp])),
    %% This node's own pid and reference come back as they went.
    Ref = make_ref(),
    ok = call(C, kv, Id, {put, mine, {self(), Ref}}),
    ?assertEqual({ok, {self(), Ref}}, call(C, kv, Id, {get, mine})),
    %% And the connection never went down.
    ?assert(lists:member(C, nodes(hidden))),
    receive {nodedown, C, _} = Down -> ct:fail({connection_dropped, Down})
    after 0 -> ok
    end,
    ok = shardnode_ct:stop_peer(Peer),
    ok = net_kernel:monitor_nodes(false, [{node_type, all}]),
    ok.

%% On the writer: stores each term (decoded there, where it names a
%% remote node) as the value of its key.
-spec put_terms(node(), term(), [term()], [binary()]) -> ok.
put_terms(C, Id, Keys, Bins) ->
    lists:foreach(fun({K, B}) -> ok = call(C, kv, Id, {put, K, binary_to_term(B)}) end,
                  lists:zip(Keys, Bins)).

%% On the writer: how many values came back equal to what was stored.
-spec read_back_whole(node(), term(), [term()], [binary()]) -> non_neg_integer().
read_back_whole(C, Id, Keys, Bins) ->
    length([K || {K, B} <- lists:zip(Keys, Bins), call(C, kv, Id, {get, K}) =:= {ok, binary_to_term(B)}]).

echo_returns_message(Config) ->
    C = ?config(cnode, Config),
    Msgs = [hello, 1, -1 bsl 70, 3.5, <<1, 2, 3>>, <<1:3>>, "text", [a | b], {}, #{a => [1, {2}]},
            self(), make_ref()],
    [?assertEqual(M, call(C, echo, echo_id, M)) || M <- Msgs],
    ok.

%% get_shard_region_state places every live entity in shard
%% erlang:phash2(Id, NumberOfShards).
region_state_places_ids(Config) ->
    C = ?config(cnode, Config),
    Ids = [{placed, N} || N <- lists:seq(1, 1000)] ++
          [<<"bin">>, "str", atom_id, 1 bsl 80, -5, 2.5, #{m => 1}, [x | y]],
    [1 = call(C, counter, Id, incr) || Id <- Ids],
    {ok, State} = gen_server:call({counter, C}, get_shard_region_state),
    Placed = maps:from_list([{Id, Shard} || {Shard, Live} <- maps:to_list(State), Id <- Live]),
    [?assertEqual({Id, erlang:phash2(Id, ?N_SHARDS)}, {Id, maps:get(Id, Placed, missing)})
     || Id <- Ids],
    ok.

cluster_stats_count_entities(Config) ->
    C = ?config(cnode, Config),
    [call(C, kv, {stats, N}, {put, k, v}) || N <- lists:seq(1, 300)],
    {ok, #{C := PerShard}} = gen_server:call({kv, C}, get_cluster_sharding_stats),
    {ok, State} = gen_server:call({kv, C}, get_shard_region_state),
    ?assertEqual(maps:map(fun(_, Ids) -> length(Ids) end, State), PerShard),
    ?assert(lists:sum(maps:values(PerShard)) >= 300),
    ok.

%% `passivate' stops the entity; its next message starts it afresh at 0.
passivate_restarts_at_zero(Config) ->
    C = ?config(cnode, Config),
    Id = <<"passive">>,
    [call(C, counter, Id, incr) || _ <- lists:seq(1, 3)],
    ?assertEqual(3, call(C, counter, Id, get)),
    ?assertEqual(ok, call(C, counter, Id, passivate)),
    ?assertNot(lists:member(Id, live_ids(C, counter))),
    ?assertEqual(0, call(C, counter, Id, get)),
    ?assertEqual(ok, call(C, counter, never_started, passivate)),
    ok.

unknown_message_error(Config) ->
    C = ?config(cnode, Config),
    ?assertEqual({error, {unknown_message, jump}}, call(C, counter, u1, jump)),
    ?assertEqual({error, {unknown_message, {incr, not_a_number}}}, call(C, counter, u1, {incr, not_a_number})),
    ?assertEqual({error, {unknown_message, {get}}}, call(C, kv, u1, {get})),
    ?assertEqual(0, call(C, counter, u1, get)),
    ok.

bad_entity_id_error(Config) ->
    C = ?config(cnode, Config),
    Ref = make_ref(),
    Fun = fun() -> ok end,
    ?assertEqual({error, {bad_entity_id, self()}}, call(C, counter, self(), get)),
    ?assertEqual({error, {bad_entity_id, Ref}}, call(C, counter, Ref, get)),
    ?assertEqual({error, {bad_entity_id, Fun}}, call(C, counter, Fun, get)),
    ?assertEqual({error, {bad_entity_id, {ok, [self()]}}}, call(C, counter, {ok, [self()]}, get)),
    {counter, C} ! {Ref, incr},
    ?assertEqual({counter, Ref, {error, {bad_entity_id, Ref}}}, receive_reply(counter, Ref)),
    ?assertEqual(1, call(C, counter, still_serving, incr)),
    ok.

bad_request_error(Config) ->
    C = ?config(cnode, Config),
    ?assertEqual({error, {bad_request, nonsense}}, gen_server:call({counter, C}, nonsense)),
    ?assertEqual({error, {bad_request, {a, b, c}}}, gen_server:call({counter, C}, {a, b, c})),
    {counter, C} ! not_a_pair,
    {counter, C} ! {only, two, three},
    ?assertEqual(1, call(C, counter, after_garbage, incr)),
    ok.

%% The same id sent from another node, through another connection, names
%% the same entity.
equal_ids_one_entity(Config) ->
    C = ?config(cnode, Config),
    {ok, Peer, P} = shardnode_ct:start_peer(Config, shardnode_ct:unique_name("eq"), []),
    try
        Id = {"shared", <<"id">>, 1.5, #{a => 1}},
        ?assertEqual(1, call(C, counter, Id, incr)),
        ?assertEqual(2, erpc:call(P, gen_server, call, [{counter, C}, {Id, incr}])),
        ?assertEqual(2, call(C, counter, Id, get))
    after
        shardnode_ct:stop_peer(Peer)
    end,
    ok.

%% 100 000 entities live on one node at once.
hundred_thousand_entities(Config) ->
    C = ?config(cnode, Config),
    N = 100000,
    Sink = spawn_sink(),
    Sink ! {tell_all, {counter, C}, [{{many, I}, incr} || I <- lists:seq(1, N)]},
    ?assertEqual(ok, shardnode_poll:until(
                       fun() -> entities(C, counter) >= N end, 60000)),
    ?assertEqual(1, call(C, counter, {many, N}, get)),
    ?assertEqual(1, call(C, counter, {many, 1}, get)),
    exit(Sink, kill),
    ok.

%% With passivate_idle_after_ms set, an idle entity stops by itself.
idle_passivation(Config) ->
    C = ?config(cnode, Config),
    ?assertEqual(5, call(C, counter, sleepy, {incr, 5})),
    ?assert(lists:member(sleepy, live_ids(C, counter))),
    ?assertEqual(ok, shardnode_poll:until(
                       fun() -> not lists:member(sleepy, live_ids(C, counter)) end, 5000)),
    ?assertEqual(0, call(C, counter, sleepy, get)),
    ok.

%% buffer_size 0: a call for a shard whose home is not yet known cannot be
%% buffered and is answered {error, overloaded}; once the home is known,
%% calls succeed.
overloaded_when_buffer_full(Config) ->
    C = ?config(cnode, Config),
    ?assertEqual({error, overloaded}, call(C, counter, first, incr)),
    ?assertEqual(ok, shardnode_poll:until(fun() -> call(C, counter, first, get) =:= 0 end, 5000)),
    {counter, C} ! {dropped_tell, incr},
    ?assertEqual(ok, shardnode_poll:until(
                       fun() -> maps:get(dropped, region_stats(C, counter)) >= 1 end, 5000)),
    ok.

%% graceful_shutdown: `ok', then the region's monitors get `normal' and its
%% name is gone (`noproc' at once); the node goes on serving other types.
graceful_shutdown_unregisters(Config) ->
    C = ?config(cnode, Config),
    ?assertEqual(1, call(C, counter, before_shutdown, incr)),
    Mon = erlang:monitor(process, {counter, C}),
    ?assertEqual(ok, gen_server:call({counter, C}, graceful_shutdown)),
    receive {'DOWN', Mon, process, _, Reason} -> ?assertEqual(normal, Reason)
    after 5000 -> ct:fail(no_down)
    end,
    ?assertExit({noproc, _}, gen_server:call({counter, C}, {x, get}, 2000)),
    ?assertEqual(hi, call(C, echo, still_here, hi)),
    ok.

%% remember_entities: the entities a node ran are started again when it
%% restarts with the same data_dir, without a message — but not one that was
%% passivated (stopped for good). State is not kept, only which entities ran.
remembered_entities_survive_a_restart(Config) ->
    Name = shardnode_ct:unique_name("remember") ++ "@127.0.0.1",
    Dir = filename:join(?config(priv_dir, Config), Name),
    Opts = #{name => Name, config => #{remember_entities => true, data_dir => Dir}},
    {[C], Config1} = shardnode_ct:start_nodes(Config, [Opts]),
    Ids = [{user, I} || I <- lists:seq(1, 200)],
    [1 = call(C, counter, Id, incr) || Id <- Ids],
    ?assertEqual(ok, call(C, counter, {user, 7}, passivate)),
    [<<"k">> = call(C, echo, Id, <<"k">>) || Id <- [a, b]],
    ok = shardnode_ct:stop_nodes(Config1),
    {[C], Config2} = shardnode_ct:start_nodes(Config, [Opts]),
    try
        Want = lists:sort(Ids -- [{user, 7}]),
        ?assertEqual(ok, shardnode_poll:until(fun() -> lists:sort(live_ids(C, counter)) =:= Want end, 10000),
                     {live, lists:sort(live_ids(C, counter))}),
        ?assertEqual(ok, shardnode_poll:until(fun() -> lists:sort(live_ids(C, echo)) =:= [a, b] end, 10000)),
        ?assertEqual([], live_ids(C, kv)),
        ?assertEqual(0, call(C, counter, {user, 1}, get)),
        ?assertEqual(1, call(C, counter, {user, 7}, incr))
    after
        shardnode_ct:stop_nodes(Config2)
    end.

%% A flood of tells to a million distinct ids, with idle passivation on,
%% neither crashes the node nor lets it grow without bound.
million_ids_flood_bounded(Config) ->
    C = ?config(cnode, Config),
    {ok, OsPid} = shardnode:os_pid(C),
    Sink = spawn_sink(),
    Batches = 20,
    PerBatch = 50000,
    [begin
         Sink ! {tell_all, {counter, C}, [{{flood, B, I}, incr} || I <- lists:seq(1, PerBatch)]},
         ?assertEqual(ok, shardnode_poll:until(fun() -> sink_done(Sink) end, 60000))
     end || B <- lists:seq(1, Batches)],
    ?assertEqual(1, call(C, counter, after_flood, incr)),
    Rss = rss_kb(OsPid),
    ct:log("RSS after ~p tells to distinct ids: ~p KiB", [Batches * PerBatch, Rss]),
    ?assert(Rss < 400 * 1024),
    ?assertEqual(ok, shardnode_poll:until(fun() -> entities(C, counter) < PerBatch * 4 end, 10000)),
    exit(Sink, kill),
    ok.

%% An entity type loaded from priv/examples/account.so (plugin_dir),
%% beside a built-in one.
plugin_entity_type(Config) ->
    C = ?config(cnode, Config),
    ?assertEqual({ok, [counter, account]}, gen_server:call({shardnode, C}, shard_types)),
    ?assertEqual(100, call(C, account, alice, {deposit, 100})),
    ?assertEqual(30, call(C, account, alice, {withdraw, 70})),
    ?assertEqual({error, insufficient_funds}, call(C, account, alice, {withdraw, 31})),
    ?assertEqual(30, call(C, account, alice, balance)),
    ?assertEqual(ok, call(C, account, alice, passivate)),
    ?assertEqual(0, call(C, account, alice, balance)),
    %% Without plugin_dir the example is not loaded: `account' is no type
    %% (so one of a user's own may have that name).
    Name = shardnode_ct:unique_name("noex") ++ "@127.0.0.1",
    ?assertMatch({error, {exited, 2, _}}, shardnode:start_node(#{name => Name, types => [counter, account]})),
    ok.

%%====================================================================
%% Helpers
%%====================================================================

receive_reply(Type, Id) ->
    receive {Type, Id, _} = Reply -> Reply
    after 5000 -> ct:fail({no_reply, Type, Id})
    end.

live_ids(C, Type) ->
    {ok, State} = gen_server:call({Type, C}, get_shard_region_state),
    lists:append(maps:values(State)).

region_stats(C, Type) ->
    {ok, Stats} = gen_server:call({Type, C}, get_region_stats),
    Stats.

entities(C, Type) ->
    maps:get(entities, region_stats(C, Type)).

slices(List, N) ->
    Size = max(1, (length(List) + N - 1) div N),
    slices_of(List, Size).

slices_of([], _) -> [];
slices_of(List, Size) when length(List) =< Size -> [List];
slices_of(List, Size) ->
    {H, T} = lists:split(Size, List),
    [H | slices_of(T, Size)].

%% A process that sends tells for the test and throws their replies away,
%% so the test process's mailbox stays small.
spawn_sink() ->
    spawn(fun() -> sink(idle) end).

sink(State) ->
    receive
        {tell_all, Dest, Msgs} ->
            [Dest ! M || M <- Msgs],
            sink(sent);
        {done, From} ->
            From ! {sink_done, self(), State},
            sink(State);
        _Reply ->
            sink(State)
    end.

sink_done(Sink) ->
    Sink ! {done, self()},
    receive {sink_done, Sink, sent} -> true after 5000 -> false end.

rss_kb(OsPid) ->
    {ok, Status} = file:read_file("/proc/" ++ integer_to_list(OsPid) ++ "/status"),
    [Line] = [L || L <- binary:split(Status, <<"\n">>, [global]), binary:match(L, <<"VmRSS">>) =/= nomatch],
    [_, Kb | _] = binary:split(Line, [<<" ">>, <<"\t">>], [global, trim_all]),
    binary_to_integer(Kb).

%% priv/examples beside the executable the nodes run: where `make' builds
%% the example plugins, which a node loads only when asked.
examples_dir() ->
    {ok, #{executable := Exe}} = shardnode_args:command(#{name => "probe@127.0.0.1"}),
    filename:join(filename:dirname(Exe), "examples").
