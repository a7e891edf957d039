%% Entities written in Erlang (docs/contract.md, "Entities written in
%% Erlang and Elixir"), against real C nodes whose host is this node:
%% sn_cart and sn_tally run here as processes, the C nodes route, move,
%% store and answer. sn_tally reports every process's start and end to
%% this suite's instance recorder, which fails a case on a second live
%% process for one id.
-module(shardnode_erlang_entities_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2, end_per_testcase/2]).
-export([log/2]). %% a logger handler of the cases' own
-export([max_active_entities_passivates_erlang_entities_too/1,
         types_none_hosts_the_erlang_types_alone/1]).
-export([an_erlang_entity_answers_as_a_c_one/1,
         a_crash_answers_the_call_and_the_next_message_restarts/1,
         every_exit_answers_the_call_and_is_logged_once/1,
         states_move_with_their_shards_and_no_entity_runs_twice/1,
         a_store_keeps_what_the_entity_completed/1,
         a_singleton_of_an_erlang_type/1,
         a_singleton_of_a_type_its_host_names/1,
         a_c_node_started_by_hand_names_its_host/1,
         a_host_down_hands_its_shards_over_and_takes_them_back/1,
         remembered_erlang_entities_run_again_without_a_message/1,
         graceful_shutdown_of_an_erlang_region_moves_its_states/1,
         a_c_node_with_host_alone_waits_for_its_types/1,
         health_names_the_host_while_it_is_away/1,
         a_lapsed_lease_answers_the_call_at_the_process/1]).

-import(sn_test, [await/1, start_incrementer/4, acked/1, stop_incrementer/1]).

-define(SHARDS, 20).

suite() -> [{timetrap, {minutes, 3}}].

all() ->
    [an_erlang_entity_answers_as_a_c_one,
     a_crash_answers_the_call_and_the_next_message_restarts,
     every_exit_answers_the_call_and_is_logged_once,
     states_move_with_their_shards_and_no_entity_runs_twice,
     a_store_keeps_what_the_entity_completed,
     a_singleton_of_an_erlang_type,
     a_singleton_of_a_type_its_host_names,
     a_c_node_started_by_hand_names_its_host,
     a_host_down_hands_its_shards_over_and_takes_them_back,
     remembered_erlang_entities_run_again_without_a_message,
     graceful_shutdown_of_an_erlang_region_moves_its_states,
     a_c_node_with_host_alone_waits_for_its_types,
     health_names_the_host_while_it_is_away,
     a_lapsed_lease_answers_the_call_at_the_process,
     max_active_entities_passivates_erlang_entities_too,
     types_none_hosts_the_erlang_types_alone].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(shardnode),
    Config.

end_per_suite(_Config) ->
    ?assertEqual([], shardnode:which_nodes()),
    ok.

init_per_testcase(_Case, Config) ->
    Recorder = sn_test:start_instance_recorder(),
    [{recorder, Recorder} | Config].

end_per_testcase(_Case, Config) ->
    shardnode_ct:stop_all_nodes(Config),
    %% No entity process outlives its C node.
    await(fun() -> shardnode_entity_host:dispatchers() =:= [] end),
    exit(?config(recorder, Config), kill),
    ok.

%%====================================================================
%% Cases
%%====================================================================

%% Calls, tells (their reply comes as {Type, Id, Reply}), a stop chosen by
%% the entity, passivate and delete, the region's requests; next to a C
%% type on the same node.
an_erlang_entity_answers_as_a_c_one(Config) ->
    Port = shardnode_ct:free_port(),
    {[N], _} = shardnode_ct:start_nodes(Config, [opts("ent", #{metrics_port => Port})]),
    ?assertEqual(ok, call(N, cart, <<"a">>, {add, apple, 2})),
    ?assertEqual(#{apple => 2}, call(N, cart, <<"a">>, items)),
    {cart, N} ! {<<"a">>, {add, pear, 1}},
    receive {cart, <<"a">>, ok} -> ok after 5000 -> ct:fail(no_tell_reply) end,
    ?assertEqual(#{apple => 2, pear => 1}, call(N, cart, <<"a">>, items)),
    %% Any term is an id, as for a C type.
    ?assertEqual(ok, call(N, cart, {user, 7}, {add, fig, 3})),
    ?assertEqual(#{fig => 3}, call(N, cart, {user, 7}, items)),
    ?assertEqual(1, call(N, counter, <<"a">>, incr)),
    %% {stop, Reply, State}: answered, and the entity ends (no store: its
    %% next message starts it afresh).
    ?assertEqual({ok, #{apple => 2, pear => 1}}, call(N, cart, <<"a">>, checkout)),
    ?assertEqual(#{}, call(N, cart, <<"a">>, items)),
    {ok, Regions} = gen_server:call({cart, N}, get_shard_region_state),
    ?assert(lists:member(<<"a">>, lists:append(maps:values(Regions)))),
    ?assertEqual(ok, call(N, cart, <<"a">>, passivate)),
    await(fun() -> not lists:member(<<"a">>, live(N, cart)) end),
    ?assertEqual(ok, call(N, cart, <<"b">>, {add, kiwi, 1})),
    ?assertEqual(ok, call(N, cart, <<"b">>, delete)),
    ?assertEqual(#{}, call(N, cart, <<"b">>, items)),
    %% Many messages to one entity at once: answered in order, none lost.
    Self = self(),
    [spawn_link(fun() -> Self ! {done, K, call(N, tally, many, incr)} end) || K <- lists:seq(1, 200)],
    Values = [receive {done, K, V} -> V after 10000 -> ct:fail({no_answer, K}) end || K <- lists:seq(1, 200)],
    ?assertEqual(lists:seq(1, 200), lists:sort(Values)),
    %% The client's batches reach Erlang entities too, their replies in order.
    ?assertEqual([201, 202, 1], shardnode:multi_call(N, tally, [{many, incr}, {many, incr}, {other, incr}])),
    ?assertEqual(203, shardnode:call(N, tally, many, incr)),
    %% The metrics of a C type, and how long the processes took.
    Page = metrics_page(Port),
    Metric = fun(Name, Type) ->
                     shardnode_ct:metric_value(Page, iolist_to_binary([Name, "{type=\"", Type, "\"}"]))
             end,
    ?assert(Metric("shardnode_messages_total", "tally\",kind=\"ask") >= 200),
    ?assert(Metric("shardnode_reply_latency_seconds_count", "tally") >= 200),
    ?assert(Metric("shardnode_entity_process_seconds_count", "tally") >= 200),
    ?assert(Metric("shardnode_entity_process_seconds_sum", "tally") > 0),
    ?assertEqual(undefined, Metric("shardnode_entity_process_seconds_count", "counter")),
    no_second_instance(Config),
    ok = shardnode:stop_node(N).

%% A call whose handle/2 raises is answered {error, {entity_crashed,
%% Reason}} at once; the next message starts the entity again from its
%% last completed state; the C node logs the crash, its id and reason as
%% ~p prints them, and that is the crash's one log record: the host (this
%% node) logs nothing of it.
a_crash_answers_the_call_and_the_next_message_restarts(Config) ->
    {[N], _} = shardnode_ct:start_nodes(Config, [opts("ent", #{})]),
    ok = logger:add_handler(host_spy, ?MODULE, #{config => #{to => self()}, level => notice}),
    try
        ?assertEqual(ok, call(N, cart, <<"alice">>, {add, apple, 2})),
        T0 = erlang:monotonic_time(millisecond),
        ?assertMatch({error, {entity_crashed, {asked_to_crash, _}}}, call(N, cart, <<"alice">>, crash)),
        ?assert(erlang:monotonic_time(millisecond) - T0 < 2000),
        ?assertEqual(#{apple => 2}, call(N, cart, <<"alice">>, items)),
        %% (logfmt escapes the quotes of msg="...")
        Said = <<"entity <<\\\"alice\\\">> of cart crashed: {asked_to_crash,">>,
        await(fun() -> lists:any(fun(L) -> binary:match(L, Said) =/= nomatch end, output(N)) end),
        %% The host logs in the crashing process, before its end reaches
        %% the C node: what it logged is here by now. (The C node's own
        %% lines come to this node's logger too, from its port.)
        ?assertEqual([], [E || {host_logged, #{meta := M} = E} <- flush(),
                               maps:get(domain, M, []) =/= [shardnode, node]])
    after
        logger:remove_handler(host_spy)
    end,
    %% A state changed by the entity's own timer is what it restarts from.
    ?assertEqual(ok, call(N, tally, 2, {set_later, 40, 10})),
    await(fun() -> call(N, tally, 2, get) =:= 40 end),
    ok = call(N, tally, 2, passivate),
    ?assertEqual(0, call(N, tally, 2, get)), %% no store: a passivated entity starts afresh
    ok = shardnode:stop_node(N).

%% max_active_entities holds for a type written in Erlang: beyond it the
%% least recently used entities' processes end, as a passivation ends
%% them, and their states stay in the store: each answers with all it was
%% given.
max_active_entities_passivates_erlang_entities_too(Config) ->
    Dir = filename:join(?config(priv_dir, Config), "limit"),
    {[N], _} = shardnode_ct:start_nodes(Config, [opts("lim", #{state_store => lmdb, data_dir => Dir,
                                                               max_active_entities => 5})]),
    Ids = lists:seq(1, 20),
    [?assertEqual(ok, call(N, cart, I, {add, apple, I})) || I <- Ids],
    await(fun() -> length(live(cart)) =< 5 end),
    [?assertEqual(ok, call(N, cart, I, {add, pear, 1})) || I <- Ids],
    [?assertEqual(#{apple => I, pear => 1}, call(N, cart, I, items)) || I <- Ids],
    await(fun() -> length(live(cart)) =< 5 end),
    ok = shardnode:stop_node(N).

%% types => [] is none of the built-in types: the node hosts its types
%% written in Erlang alone (before, it hosted counter, kv and echo too).
types_none_hosts_the_erlang_types_alone(Config) ->
    {[N], _} = shardnode_ct:start_nodes(Config, [(opts("none", #{}))#{types => []}]),
    ?assertEqual({ok, [cart, tally]}, gen_server:call({shardnode, N}, shard_types)),
    ?assertEqual(ok, call(N, cart, 1, {add, apple, 1})),
    ok = shardnode:stop_node(N).

%% An entity that exits in handle/2 — normal, shutdown, {shutdown, _} or
%% kill, each as a crash does — gets its call answered {error,
%% {entity_crashed, Reason}} at once, the C node logs it once with type,
%% id and reason, and the next message starts it again from its last
%% completed state.
every_exit_answers_the_call_and_is_logged_once(Config) ->
    {[N], _} = shardnode_ct:start_nodes(Config, [opts("ent", #{})]),
    Exits = [{exit_shutdown, shutdown}, {exit_shutdown_why, {shutdown, why}}, {exit_kill, kill},
             {exit_normal, normal}],
    %% The line's text, spaces aside (terms may be printed with or without).
    Line = fun(Id, Reason) -> iolist_to_binary(io_lib:format("entity ~p of cart crashed: ~p\"", [Id, Reason])) end,
    Logged = fun(Id, Reason) -> length([L || L <- output(N), binary:match(L, Line(Id, Reason)) =/= nomatch]) end,
    lists:foreach(
      fun({Id, Reason}) ->
              ?assertEqual(ok, call(N, cart, Id, {add, apple, 1})),
              T0 = erlang:monotonic_time(millisecond),
              ?assertEqual({error, {entity_crashed, Reason}}, call(N, cart, Id, {exit, Reason})),
              ?assert(erlang:monotonic_time(millisecond) - T0 < 2000),
              ?assertEqual(#{apple => 1}, call(N, cart, Id, items)),
              ?assertEqual(ok, call(N, cart, Id, {add, apple, 1})),
              ?assertEqual(#{apple => 2}, call(N, cart, Id, items)),
              await(fun() -> Logged(Id, Reason) > 0 end),
              ?assertEqual(1, Logged(Id, Reason))
      end, Exits),
    ok = shardnode:stop_node(N).

%% Three members with lmdb host an Erlang type and a C type; callers
%% increment through every member while a fourth joins and one leaves.
%% Every acknowledged value holds (states move with their shards, written
%% on the new home), and no id ever has two live processes.
states_move_with_their_shards_and_no_entity_runs_twice(Config) ->
    Dir = ?config(priv_dir, Config),
    [OA, OB, OC, OD] = [opts(Nm, #{state_store => lmdb, data_dir => filename:join(Dir, Nm)})
                        || Nm <- [shardnode_ct:unique_name("ent") || _ <- lists:seq(1, 4)]],
    {[A], _} = shardnode_ct:start_nodes(Config, [OA]),
    {[B, C], _} = shardnode_ct:start_nodes(Config, [OB#{join => [A]}, OC#{join => [A]}]),
    await(fun() -> [shardnode_ct:members(X) || X <- [A, B, C]] =:= [[A, B, C] || _ <- [A, B, C]] end),
    Clients = [start_incrementer(X, T, [{X, T, K} || K <- lists:seq(1, 30)], continue)
               || X <- [A, B, C], T <- [tally, counter]],
    await(fun() -> lists:all(fun(Cl) -> acked(Cl) > 100 end, Clients) end),
    {[D], _} = shardnode_ct:start_nodes(Config, [OD#{join => [A]}]),
    await(fun() -> shard_count(D, tally) >= ?SHARDS div 4 - 1 end),
    Before = [acked(Cl) || Cl <- Clients],
    await(fun() -> lists:all(fun({Cl, K}) -> acked(Cl) > K + 50 end, lists:zip(Clients, Before)) end),
    %% B leaves: its clients' calls fail meanwhile, the others go on.
    ok = shardnode:stop_node(B),
    Going = [{Cl, acked(Cl)} || {Cl, X} <- lists:zip(Clients, [X || X <- [A, B, C], _ <- [tally, counter]]),
                                X =/= B],
    await(fun() -> lists:all(fun({Cl, K}) -> acked(Cl) > K + 50 end, Going) end),
    Acked = lists:foldl(fun(Cl, Acc) -> maps:merge(Acc, stop_incrementer(Cl)) end, #{}, Clients),
    ct:log("~b entities, ~b acknowledged increments", [maps:size(Acked), lists:sum(maps:values(Acked))]),
    Wrong = [{Id, V, Got} || {{_, T, _} = Id, V} <- maps:to_list(Acked),
                             Got <- [call(A, T, Id, get)], Got < V orelse Got > V + 1],
    ?assertEqual([], Wrong),
    no_second_instance(Config),
    [ok = shardnode:stop_node(X) || X <- [A, C, D]].

%% With lmdb: what the entity completed is stored before the reply, so a
%% passivated entity, and a node restarted on its data_dir, continue from
%% it — also a state its own timer set.
a_store_keeps_what_the_entity_completed(Config) ->
    Name = shardnode_ct:unique_name("ent"),
    Opts = opts(Name, #{state_store => lmdb, data_dir => filename:join(?config(priv_dir, Config), Name)}),
    {[N], _} = shardnode_ct:start_nodes(Config, [Opts]),
    [_ = call(N, tally, K, {incr, K}) || K <- lists:seq(1, 50)],
    ok = call(N, tally, 1, passivate),
    ?assertEqual(1, call(N, tally, 1, get)),
    ?assertEqual(ok, call(N, tally, 7, {set_later, 700, 10})),
    await(fun() -> call(N, tally, 7, get) =:= 700 end),
    ?assertEqual(ok, call(N, cart, <<"c">>, {add, apple, 1})),
    ?assertEqual(ok, call(N, tally, 9, delete)),
    ok = shardnode:kill_node(N),
    {[N], _} = shardnode_ct:start_nodes(Config, [Opts]),
    ?assertEqual(700, call(N, tally, 7, get)),
    ?assertEqual(0, call(N, tally, 9, get)),
    ?assertEqual([], [{K, V} || K <- lists:seq(1, 50) -- [7, 9], V <- [call(N, tally, K, get)], V =/= K]),
    ?assertEqual(#{apple => 1}, call(N, cart, <<"c">>, items)),
    ok = shardnode:stop_node(N).

%% --singleton NAME=TYPE of an Erlang type: one entity in the cluster,
%% reached by its name from every member, its state carried to the next
%% oldest when the oldest leaves.
a_singleton_of_an_erlang_type(Config) ->
    Single = #{singletons => [{boss, tally}]},
    {[A], _} = shardnode_ct:start_nodes(Config, [maps:merge(opts("ent", #{}), Single)]),
    {[B], _} = shardnode_ct:start_nodes(Config, [maps:merge((opts("ent", #{}))#{join => [A]}, Single)]),
    await(fun() -> shardnode_ct:members(B) =:= [A, B] end),
    ?assertEqual(1, gen_server:call({boss, A}, incr)),
    ?assertEqual(2, gen_server:call({boss, B}, incr)),
    ok = shardnode:stop_node(A),
    ?assertEqual(3, gen_server:call({boss, B}, incr, 10000)),
    no_second_instance(Config),
    ok = shardnode:stop_node(B).

%% --singleton NAME=TYPE with --host alone, for a type the host names at
%% start: the node waits for the host's types, then runs the singleton.
%% A singleton whose type neither --types nor the host names stops the
%% node at start, saying so.
a_singleton_of_a_type_its_host_names(Config) ->
    {HostPeer, Host} = start_host(Config, shardnode_ct:unique_name("host")),
    Opts = fun(Singleton) ->
                   #{name => shardnode_ct:unique_name("single") ++ "@127.0.0.1", types => [counter],
                     singletons => [Singleton], extra_args => ["--host", atom_to_list(Host)]}
           end,
    {ok, N} = shardnode:start_node(Opts({boss, tally})),
    ?assertEqual(1, gen_server:call({boss, N}, incr, 10000)),
    ?assertEqual(2, gen_server:call({boss, N}, incr, 10000)),
    ?assertEqual({ok, N}, gen_server:call({shardnode, N}, {singleton, boss})),
    ok = shardnode:stop_node(N),
    {error, {exited, 1, Lines}} = shardnode:start_node(Opts({boss, cart})),
    ?assert(lists:any(fun(L) -> string:find(L, "singleton boss: its type cart") =/= nomatch end, Lines)),
    _ = Config,
    down(HostPeer, Host).

%% A C node started without the wrapper names its host with --host and
%% --host-types; shardnode:host_entities/1 on the host gives the modules.
%% With --host alone it waits for the host to name the types.
a_c_node_started_by_hand_names_its_host(Config) ->
    ok = shardnode:host_entities(#{tally => sn_tally}),
    Name = shardnode_ct:unique_name("ent") ++ "@127.0.0.1",
    {ok, N} = shardnode:start_node(#{name => Name, types => [counter],
                                     extra_args => ["--host", atom_to_list(node()), "--host-types", "tally"]}),
    ?assertEqual(1, call(N, tally, x, incr)),
    ?assertEqual({error, {not_an_entity_module, lists}}, shardnode:host_entities(#{tally => lists})),
    %% With --host alone, the C node hosts the types the host names.
    Name2 = shardnode_ct:unique_name("ent") ++ "@127.0.0.1",
    {ok, N2} = shardnode:start_node(#{name => Name2, types => [counter], join => [N],
                                      extra_args => ["--host", atom_to_list(node())]}),
    {ok, Types} = gen_server:call({shardnode, N2}, shard_types),
    ?assert(lists:member(tally, Types) andalso lists:member(counter, Types)),
    ?assert(lists:any(fun(L) -> string:find(L, "waiting for host") =/= nomatch end, output(N2))),
    ?assertEqual(2, call(N2, tally, x, incr)),
    _ = Config,
    ok = shardnode:stop_node(N2),
    ok = shardnode:stop_node(N).

%% Two C nodes, each with its own host: A's is this node, B's a peer. When
%% B's host goes down, the call its process was handling is answered at
%% once, B's shards of the type move to A with their states (B routes on),
%% and once the host is back B takes shards again; no value goes back.
a_host_down_hands_its_shards_over_and_takes_them_back(Config) ->
    HostName = shardnode_ct:unique_name("host"),
    {HostPeer, Host} = start_host(Config, HostName),
    {[A], Config1} = shardnode_ct:start_nodes(Config, [opts("hd", #{})]),
    BOpts = (maps:remove(entities, opts("hd", #{})))#{
              join => [A],
              extra_args => ["--host", atom_to_list(Host), "--host-types", "tally"]},
    {[B], _} = shardnode_ct:start_nodes(Config1, [BOpts]),
    Ids = lists:seq(1, 60),
    [?assertEqual(1, call(A, tally, I, incr)) || I <- Ids],
    await(fun() -> shard_count(A, tally) > 0 andalso shard_count(B, tally) > 0 end),
    Total = shard_count(A, tally) + shard_count(B, tally),
    OnB = live(B, tally),
    ?assertNotEqual([], OnB),
    ?assert(lists:all(fun(I) -> lists:member(I, Ids) end, OnB)),
    %% A call at a process of the host when the host goes down.
    [Busy | _] = OnB,
    Self = self(),
    _ = spawn_link(fun() -> Self ! {busy, catch call(B, tally, Busy, {sleep, 5000})} end),
    await(fun() -> busy_on(Host) end),
    T0 = erlang:monotonic_time(millisecond),
    down(HostPeer, Host),
    receive
        {busy, Answer} ->
            ?assertMatch({error, {entity_crashed, _}}, Answer),
            ?assert(erlang:monotonic_time(millisecond) - T0 < 3000)
    after 10000 -> ct:fail(busy_call_unanswered)
    end,
    %% Its shards move to A, their states with them; B routes on.
    await(fun() -> shard_count(B, tally) =:= 0 andalso shard_count(A, tally) =:= Total end),
    [?assertEqual(2, call(B, tally, I, incr)) || I <- Ids],
    ?assert(lists:any(fun(L) -> string:find(L, "the host has not answered or is down") =/= nomatch end, output(B))),
    %% The host comes back: B takes shards again, and their entities run
    %% on it from the states they had.
    {HostPeer2, Host} = start_host(Config, HostName),
    await(fun() -> shard_count(B, tally) > 0 end),
    [?assertEqual(3, call(A, tally, I, incr)) || I <- Ids],
    ?assertNotEqual([], live(B, tally)),
    ?assert(erpc:call(Host, shardnode_entity_host, dispatchers, []) =/= []),
    no_second_instance(Config),
    [shardnode:stop_node(N) || N <- [B, A]],
    %% No entity process outlives the C nodes on the host either.
    await(fun() -> erpc:call(Host, shardnode_entity_host, dispatchers, []) =:= [] end),
    down(HostPeer2, Host).

%% remember_entities with lmdb: after a restart on the same data_dir the
%% entities that ran run again, their processes started on the host
%% before anyone sends them anything, from their stored states; one a
%% timer of its own changes meanwhile keeps that change.
remembered_erlang_entities_run_again_without_a_message(Config) ->
    Dir = filename:join(?config(priv_dir, Config), "remember"),
    Opts = opts("rem", #{state_store => lmdb, data_dir => Dir, remember_entities => true}),
    {[N], _} = shardnode_ct:start_nodes(Config, [Opts]),
    Ids = [{r, K} || K <- lists:seq(1, 20)],
    [?assertEqual(K, call(N, tally, Id, {incr, K})) || {r, K} = Id <- Ids],
    await(fun() -> lists:sort(running(Config)) =:= lists:sort(Ids) end),
    ok = shardnode:stop_node(N),
    await(fun() -> running(Config) =:= [] end),
    {[N], _} = shardnode_ct:start_nodes(Config, [Opts]),
    %% Nothing sent: the processes are there, from the stored states.
    await(fun() -> lists:sort(running(Config)) =:= lists:sort(Ids) end),
    ?assertEqual(ok, call(N, tally, {r, 1}, {set_later, 100, 50})),
    await(fun() -> call(N, tally, {r, 1}, get) =:= 100 end),
    [?assertEqual(K, call(N, tally, Id, get)) || {r, K} = Id <- Ids, K > 1],
    no_second_instance(Config),
    ok = shardnode:stop_node(N).

%% graceful_shutdown of an Erlang type's region on a node that stays: its
%% shards go to the other member with their states, its entities'
%% processes end before the other member starts theirs, and the region's
%% name goes (monitors get `normal'); the node's other types go on.
graceful_shutdown_of_an_erlang_region_moves_its_states(Config) ->
    {[A], Config1} = shardnode_ct:start_nodes(Config, [opts("gs", #{})]),
    {[B], _} = shardnode_ct:start_nodes(Config1, [(opts("gs", #{}))#{join => [A]}]),
    Ids = lists:seq(1, 60),
    [?assertEqual(K, call(A, tally, K, {incr, K})) || K <- Ids],
    await(fun() -> shard_count(B, tally) > 0 andalso shard_count(A, tally) > 0 end),
    Total = shard_count(A, tally) + shard_count(B, tally),
    Mon = erlang:monitor(process, {tally, B}),
    ?assertEqual(ok, gen_server:call({tally, B}, graceful_shutdown, 15000)),
    receive {'DOWN', Mon, process, _, Reason} -> ?assertEqual(normal, Reason)
    after 15000 -> ct:fail(region_did_not_stop)
    end,
    ?assertEqual(Total, shard_count(A, tally)),
    [?assertEqual(K + 1, call(A, tally, K, incr)) || K <- Ids],
    ?assertEqual(1, call(B, counter, x, incr)),
    no_second_instance(Config),
    [ok = shardnode:stop_node(N) || N <- [B, A]].

%% --host alone, to a host that has no types yet: the C node waits (the
%% host's welcome names none), and goes on once the host is given one; a
%% SIGTERM while it waits stops it with status 0, as any stop.
a_c_node_with_host_alone_waits_for_its_types(Config) ->
    {HostPeer, Host} = start_host(Config, shardnode_ct:unique_name("host"), #{}),
    %% A C node of our own, without the wrapper: SIGTERM and its status.
    {ok, #{executable := Exe, args := Args}} =
        shardnode_args:command(#{name => shardnode_ct:unique_name("wait") ++ "@127.0.0.1", types => [counter],
                                 extra_args => ["--host", atom_to_list(Host)]}),
    Port = open_port({spawn_executable, Exe}, [{args, Args}, exit_status, stderr_to_stdout, {line, 1000}]),
    {os_pid, OsPid} = erlang:port_info(Port, os_pid),
    port_line(Port, "waiting for host"),
    _ = os:cmd("kill -TERM " ++ integer_to_list(OsPid)),
    receive {Port, {exit_status, Status}} -> ?assertEqual(0, Status)
    after 10000 -> ct:fail(no_exit_after_sigterm)
    end,
    %% Through the wrapper: ready once the host names a type.
    Self = self(),
    Name = shardnode_ct:unique_name("wait") ++ "@127.0.0.1",
    _ = spawn_link(fun() ->
                           Self ! {started, shardnode:start_node(#{name => Name, types => [counter],
                                                                   ready_timeout => 30000,
                                                                   extra_args => ["--host", atom_to_list(Host)]})}
                   end),
    N = list_to_atom(Name),
    await(fun() -> lists:member(N, shardnode:which_nodes()) andalso
                       lists:any(fun(L) -> string:find(L, "waiting for host") =/= nomatch end, output(N)) end),
    receive {started, Early} -> ct:fail({started_without_types, Early}) after 500 -> ok end,
    ok = erpc:call(Host, shardnode, host_entities, [#{tally => sn_tally, 'Bad-Name' => sn_tally}]),
    receive {started, R} -> ?assertEqual({ok, N}, R) after 30000 -> ct:fail(not_started) end,
    {ok, Types} = gen_server:call({shardnode, N}, shard_types),
    ?assertEqual([counter, tally], lists:sort(Types)),
    ?assertEqual(1, call(N, tally, w, incr)),
    ok = shardnode:stop_node(N),
    down(HostPeer, Host).

%% The health probes of a C node with a host: /health/live answers while
%% the node waits for its host's types (a liveness probe must not restart
%% it), and /health/ready is 503 naming the host until the host answers,
%% 200 then, and 503 naming it again while the host is down.
health_names_the_host_while_it_is_away(Config) ->
    {HostPeer, Host} = start_host(Config, shardnode_ct:unique_name("host"), #{}),
    HostName = atom_to_binary(Host),
    Port = shardnode_ct:free_port(),
    Self = self(),
    Name = shardnode_ct:unique_name("health") ++ "@127.0.0.1",
    _ = spawn_link(fun() ->
                           Self ! {started, shardnode:start_node(#{name => Name, types => [counter],
                                                                   ready_timeout => 30000,
                                                                   config => #{metrics_port => Port},
                                                                   extra_args => ["--host", atom_to_list(Host)]})}
                   end),
    N = list_to_atom(Name),
    await(fun() -> lists:member(N, shardnode:which_nodes()) andalso
                       lists:any(fun(L) -> string:find(L, "waiting for host") =/= nomatch end, output(N)) end),
    NamesHost = fun() ->
                        case sn_test:http_get(Port, "/health/ready") of
                            {503, Why} -> binary:match(Why, HostName) =/= nomatch;
                            _ -> false
                        end
                end,
    await(fun() -> sn_test:http_get(Port, "/health/live") =:= {200, <<"ok\n">>} end),
    ?assert(NamesHost()),
    ok = erpc:call(Host, shardnode, host_entities, [#{tally => sn_tally}]),
    receive {started, R} -> ?assertEqual({ok, N}, R) after 30000 -> ct:fail(not_started) end,
    await(fun() -> sn_test:http_get(Port, "/health/ready") =:= {200, <<"ok\n">>} end),
    down(HostPeer, Host),
    await(NamesHost),
    ?assertEqual({200, <<"ok\n">>}, sn_test:http_get(Port, "/health/live")),
    ok = shardnode:stop_node(N).

%% The host ends a C node's processes when the C node's lease runs out (it
%% was paused with SIGSTOP longer than the lease it last sent). Woken, the
%% C node answers the call one of them was handling {error,
%% {entity_crashed, killed}}, and the next message starts the entity again
%% from its last completed state: no call is left without an answer, none
%% is sent to a process that is gone.
a_lapsed_lease_answers_the_call_at_the_process(Config) ->
    {[N], _} = shardnode_ct:start_nodes(Config, [opts("lease", #{})]),
    ?assertEqual(1, call(N, tally, busy, incr)),
    ?assertEqual(1, call(N, tally, idle, incr)),
    Self = self(),
    _ = spawn_link(fun() -> Self ! {busy, catch call(N, tally, busy, {sleep, 20000})} end),
    await(fun() -> busy_on(node()) end),
    ok = shardnode_ct:pause(N),
    await(fun() -> running(Config) =:= [] end),
    ok = shardnode_ct:resume(N),
    receive
        {busy, Answer} -> ?assertEqual({error, {entity_crashed, killed}}, Answer)
    after 5000 -> ct:fail(call_at_the_killed_process_unanswered)
    end,
    ?assertEqual(2, call(N, tally, busy, incr)),
    ?assertEqual(2, call(N, tally, idle, incr)),
    no_second_instance(Config),
    ok = shardnode:stop_node(N).

%%====================================================================
%% Helpers
%%====================================================================

%% logger handler: what this node logs goes to the case's process.
log(Event, #{config := #{to := Pid}}) ->
    Pid ! {host_logged, Event},
    ok.

%% The live processes of Type on this node, the host.
live(Type) ->
    [Id || {_, D} <- shardnode_entity_host:dispatchers(),
           {T, Id, _} <- shardnode_entity_dispatcher:entities(D), T =:= Type].

flush() ->
    receive M -> [M | flush()] after 0 -> [] end.

opts(Prefix, Extra) ->
    #{name => shardnode_ct:unique_name(Prefix) ++ "@127.0.0.1",
      types => [counter],
      entities => #{cart => sn_cart, tally => sn_tally},
      config => maps:merge(#{number_of_shards => ?SHARDS, heartbeat_interval_ms => 200,
                             rebalance_interval_ms => 300, retry_interval_ms => 300,
                             failure_timeout_ms => 1000, stable_after_ms => 1000}, Extra)}.

%% A BEAM node that hosts tally for C nodes that name it. Unlinked: it
%% goes down as a crashed node does (down/2), without taking the case.
start_host(Config, Name) ->
    start_host(Config, Name, #{tally => sn_tally}).

%% The same with the types Entities (none: the application runs, no type).
start_host(Config, Name, Entities) ->
    TestDir = filename:dirname(code:which(sn_tally)),
    {ok, Peer, Host} = shardnode_ct:start_peer(Config, #{name => Name, args => ["-pa", TestDir]}),
    unlink(Peer),
    ok = erpc:call(Host, shardnode, host_entities, [Entities]),
    {Peer, Host}.

%% Waits for a line of the port's output containing Text.
port_line(Port, Text) ->
    receive
        {Port, {data, {_, Line}}} ->
            case string:find(Line, Text) of
                nomatch -> port_line(Port, Text);
                _ -> ok
            end;
        {Port, {exit_status, S}} -> ct:fail({exited, S})
    after 15000 -> ct:fail({no_line, Text})
    end.

down(Peer, Host) ->
    Ref = erlang:monitor(process, Peer),
    erpc:cast(Host, erlang, halt, []),
    receive {'DOWN', Ref, process, Peer, _} -> ok after 10000 -> ct:fail({host_still_up, Host}) end,
    await(fun() -> not lists:member(Host, nodes()) end).

%% Whether an sn_tally process on Host is in its {sleep, _} call.
busy_on(Host) ->
    lists:any(fun(P) ->
                      case erpc:call(Host, erlang, process_info, [P, current_function]) of
                          {current_function, {timer, sleep, 1}} -> true;
                          _ -> false
                      end
              end, erpc:call(Host, erlang, processes, [])).

%% The metrics page, read over a plain TCP connection.
metrics_page(Port) ->
    {ok, S} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}], 5000),
    ok = gen_tcp:send(S, <<"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n">>),
    All = read_all(S, <<>>),
    [_Head, Body] = binary:split(All, <<"\r\n\r\n">>),
    Body.

read_all(S, Acc) ->
    case gen_tcp:recv(S, 0, 5000) of
        {ok, B} -> read_all(S, <<Acc/binary, B/binary>>);
        {error, closed} -> Acc
    end.

call(N, Type, Id, Msg) ->
    gen_server:call({Type, N}, {Id, Msg}, 10000).

live(N, Type) ->
    {ok, State} = gen_server:call({Type, N}, get_shard_region_state),
    lists:append(maps:values(State)).

shard_count(N, Type) ->
    {ok, State} = gen_server:call({Type, N}, get_shard_region_state),
    maps:size(State).

output(N) ->
    {ok, Lines} = shardnode:output(N),
    Lines.

running(Config) -> sn_test:running_instances(?config(recorder, Config)).

no_second_instance(Config) ->
    ?assertEqual([], sn_test:second_instances(?config(recorder, Config))).
