%% The host's half of entities written in Erlang (shardnode_entity_proc,
%% shardnode_entity_dispatcher): what a region of a C node sends and gets
%% back, per docs/architecture.md ("Entities written in Erlang and
%% Elixir"). The C node's half is not built yet, so this suite plays the
%% region with a process of its own, and a real BEAM peer stands for the C
%% node the dispatcher watches; once the C node speaks the protocol, the
%% cluster suites run the same against real C nodes.
-module(shardnode_entity_host_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2, end_per_testcase/2]).
-export([relay/1]).
-export([a_first_message_starts_the_entity_from_what_was_stored/1,
         messages_are_answered_in_order_with_their_state_changes/1,
         an_entity_keeps_its_own_timers/1,
         stop_and_checkout_run_terminate/1,
         a_crash_is_told_to_the_region_with_its_reason/1,
         an_exit_of_any_reason_is_told_to_the_region/1,
         the_c_node_going_down_ends_its_entities/1,
         a_lapsed_lease_ends_the_entities/1,
         a_hello_gets_a_dispatcher_per_c_node_incarnation/1,
         new_types_reach_every_c_node/1,
         a_type_not_hosted_is_refused/1,
         the_erlang_example_runs_under_the_host/1,
         a_c_node_with_a_host_says_hello_and_renews_its_lease/1,
         a_batch_is_handed_out_and_completions_come_back_batched_in_order/1,
         a_c_node_takes_the_offer_of_batches/1]).

-define(WAIT, 5000).

all() ->
    [a_first_message_starts_the_entity_from_what_was_stored,
     messages_are_answered_in_order_with_their_state_changes,
     an_entity_keeps_its_own_timers,
     stop_and_checkout_run_terminate,
     a_crash_is_told_to_the_region_with_its_reason,
     an_exit_of_any_reason_is_told_to_the_region,
     the_c_node_going_down_ends_its_entities,
     a_lapsed_lease_ends_the_entities,
     a_hello_gets_a_dispatcher_per_c_node_incarnation,
     new_types_reach_every_c_node,
     a_type_not_hosted_is_refused,
     the_erlang_example_runs_under_the_host,
     a_c_node_with_a_host_says_hello_and_renews_its_lease,
     a_batch_is_handed_out_and_completions_come_back_batched_in_order,
     a_c_node_takes_the_offer_of_batches].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(shardnode),
    Config.

end_per_suite(_Config) ->
    ok.

init_per_testcase(_Case, Config) ->
    {ok, Peer, CNode} = shardnode_ct:start_peer(Config, #{}),
    true = register(sn_cart_events, self()),
    {ok, D} = shardnode_entity_dispatcher:start_link(CNode, #{cart => sn_cart}),
    unlink(D),
    [{peer, Peer}, {cnode, CNode}, {dispatcher, D} | Config].

end_per_testcase(_Case, Config) ->
    D = ?config(dispatcher, Config),
    Entities = case is_process_alive(D) of
                   true -> [P || {_, _, P} <- shardnode_entity_dispatcher:entities(D)];
                   false -> []
               end,
    exit(D, kill),
    _ = [exit(P, kill) || P <- Entities],
    unregister(sn_cart_events),
    catch peer:stop(?config(peer, Config)),
    %% Nothing of the case is left running.
    ok = sn_test:await(fun() -> not is_process_alive(D) andalso
                                    not lists:any(fun is_process_alive/1, Entities) end),
    ok.

%% ---- the cases ----

a_first_message_starts_the_entity_from_what_was_stored(Config) ->
    D = ?config(dispatcher, Config),
    Stored = #{items => #{apple => 2}, reminders => 0},
    D ! {'$shardnode_host', start, self(), cart, <<"c1">>, Stored, 1, items},
    {Pid, #{apple := 2}, unchanged, continue} = done(<<"c1">>, 1),
    {init, <<"c1">>, Stored, Pid} = event(),
    %% A new entity starts from undefined.
    D ! {'$shardnode_host', start, self(), cart, <<"c2">>, undefined, 1, items},
    {_, #{}, unchanged, continue} = done(<<"c2">>, 1),
    {init, <<"c2">>, undefined, _} = event(),
    ?assertEqual(2, length(shardnode_entity_dispatcher:entities(D))).

messages_are_answered_in_order_with_their_state_changes(Config) ->
    Pid = start(Config, <<"c1">>),
    [Pid ! {'$shardnode_entity', Seq, {add, pear, Seq}} || Seq <- lists:seq(2, 51)],
    [{Pid, ok, {state, #{items := #{pear := N}}}, continue} = done(<<"c1">>, Seq)
     || Seq <- lists:seq(2, 51), N <- [lists:sum(lists:seq(2, Seq))]],
    %% Unchanged: nothing to write.
    Pid ! {'$shardnode_entity', 52, items},
    {Pid, #{pear := 1325}, unchanged, continue} = done(<<"c1">>, 52).

an_entity_keeps_its_own_timers(Config) ->
    Pid = start(Config, <<"c1">>),
    Pid ! {'$shardnode_entity', 2, {remind_me, 10}},
    {Pid, ok, unchanged, continue} = done(<<"c1">>, 2),
    %% The reminder arrives as handle_info; the state it changed is seen
    %% by the next message.
    ok = sn_test:await(fun() ->
                               Seq = erlang:unique_integer([positive]) + 100,
                               Pid ! {'$shardnode_entity', Seq, reminders},
                               {Pid, R, unchanged, continue} = done(<<"c1">>, Seq),
                               R =:= 1
                       end).

stop_and_checkout_run_terminate(Config) ->
    Pid = start(Config, <<"c1">>),
    Pid ! {'$shardnode_entity', 2, {add, fig, 3}},
    {Pid, ok, {state, _}, continue} = done(<<"c1">>, 2),
    Pid ! {'$shardnode_entity', 3, checkout},
    {Pid, {ok, #{fig := 3}}, {state, #{items := #{}}}, stop} = done(<<"c1">>, 3),
    {terminate, normal, #{items := #{}}, Pid} = event(),
    ok = sn_test:await(fun() -> not is_process_alive(Pid) end),
    %% A stop asked by the region (passivation, a move): terminate, no crash.
    Pid2 = start(Config, <<"c2">>),
    Pid2 ! {'$shardnode_stop', passivate},
    {terminate, passivate, _, Pid2} = event(),
    ok = sn_test:await(fun() -> not is_process_alive(Pid2) end),
    receive {'$shardnode_crashed', _, _, _} = C -> ct:fail({unexpected, C}) after 200 -> ok end.

a_crash_is_told_to_the_region_with_its_reason(Config) ->
    Pid = start(Config, <<"c1">>),
    Pid ! {'$shardnode_entity', 2, crash},
    receive
        {'$shardnode_crashed', <<"c1">>, Pid, {asked_to_crash, _Stack}} -> ok
    after ?WAIT -> ct:fail(no_crash_report)
    end,
    ?assertEqual([], shardnode_entity_dispatcher:entities(?config(dispatcher, Config))).

%% exit/1 in handle/2 with any reason, normal too (which is also how the
%% process ends of its own accord), is a crash for the region; a stop is
%% not.
an_exit_of_any_reason_is_told_to_the_region(Config) ->
    lists:foreach(
      fun({Id, Reason}) ->
              Pid = start(Config, Id),
              Pid ! {'$shardnode_entity', 2, {exit, Reason}},
              receive
                  {'$shardnode_crashed', Id, Pid, Got} -> ?assertEqual(Reason, Got)
              after ?WAIT -> ct:fail({no_crash_report, Reason})
              end
      end, [{<<"n">>, normal}, {<<"s">>, shutdown}, {<<"w">>, {shutdown, why}}, {<<"k">>, kill}]),
    Pid = start(Config, <<"c">>),
    Pid ! {'$shardnode_entity', 2, checkout},
    {Pid, _, _, stop} = done(<<"c">>, 2),
    ok = sn_test:await(fun() -> not is_process_alive(Pid) end),
    ?assertEqual([], shardnode_entity_dispatcher:entities(?config(dispatcher, Config))),
    receive {'$shardnode_crashed', _, _, _} = C -> ct:fail({unexpected, C}) after 200 -> ok end.

the_c_node_going_down_ends_its_entities(Config) ->
    D = ?config(dispatcher, Config),
    Pids = [start(Config, Id) || Id <- [<<"a">>, <<"b">>, <<"c">>]],
    Ref = monitor(process, D),
    ok = peer:stop(?config(peer, Config)),
    receive {'DOWN', Ref, process, D, normal} -> ok after ?WAIT -> ct:fail(dispatcher_alive) end,
    ok = sn_test:await(fun() -> not lists:any(fun is_process_alive/1, Pids) end).

a_lapsed_lease_ends_the_entities(Config) ->
    D = ?config(dispatcher, Config),
    D ! {'$shardnode_host', lease, 60000},
    Pids = [start(Config, Id) || Id <- [<<"a">>, <<"b">>]],
    %% Renewed: still running.
    D ! {'$shardnode_host', lease, 100},
    true = lists:all(fun is_process_alive/1, Pids),
    ok = sn_test:await(fun() -> not lists:any(fun is_process_alive/1, Pids) end),
    ?assertEqual([], shardnode_entity_dispatcher:entities(D)),
    %% The region hears of each, killed: the host ends them a margin
    %% before the C node's own lease runs out, so the C node would
    %% otherwise go on sending to processes that are gone.
    Told = [receive {'$shardnode_crashed', Id, Pid, killed} -> {Id, Pid} after ?WAIT -> ct:fail({not_told, Id}) end
            || {Id, Pid} <- lists:zip([<<"a">>, <<"b">>], Pids)],
    ?assertEqual(2, length(Told)),
    receive {'$shardnode_crashed', _, _, _} = C -> ct:fail({told_twice, C}) after 200 -> ok end.

%% ---- the host ----

a_hello_gets_a_dispatcher_per_c_node_incarnation(Config) ->
    CNode = ?config(cnode, Config),
    ok = shardnode_entity_host:add_types(#{cart => sn_cart}),
    Link = relay_on(CNode),
    Host = {shardnode_entity_host, node()},
    Host ! {'$shardnode_host', hello, CNode, Link},
    {welcome, D, Types} = host_msg(),
    ?assert(lists:member(cart, Types)),
    %% Asked again (a retry): the same dispatcher.
    Host ! {'$shardnode_host', hello, CNode, Link},
    {welcome, D, _} = host_msg(),
    %% Another incarnation: one of its own.
    Link2 = relay_on(CNode),
    Host ! {'$shardnode_host', hello, CNode, Link2},
    {welcome, D2, _} = host_msg(),
    ?assertNotEqual(D, D2),
    %% The dispatcher it got runs entities.
    D ! {'$shardnode_host', start, self(), cart, <<"h1">>, undefined, 1, items},
    {_, #{}, unchanged, continue} = done(<<"h1">>, 1),
    {init, <<"h1">>, undefined, _} = event(),
    %% A hello that claims another node than its sender's is ignored.
    Host ! {'$shardnode_host', hello, 'other@127.0.0.1', Link},
    receive {relayed, {'$shardnode_host', welcome, _, _}} = W -> ct:fail({unexpected, W})
    after 200 -> ok end,
    %% The C node going down ends both dispatchers.
    ok = peer:stop(?config(peer, Config)),
    ok = sn_test:await(fun() -> not is_process_alive(D) andalso not is_process_alive(D2) end),
    ok = sn_test:await(fun() -> [] =:= [C || {C, _} <- shardnode_entity_host:dispatchers(), C =:= CNode] end).

new_types_reach_every_c_node(Config) ->
    CNode = ?config(cnode, Config),
    Link = relay_on(CNode),
    {shardnode_entity_host, node()} ! {'$shardnode_host', hello, CNode, Link},
    {welcome, D, _} = host_msg(),
    ok = shardnode_entity_host:add_types(#{cart2 => sn_cart}),
    {types, Types} = host_msg(),
    ?assert(lists:member(cart2, Types)),
    D ! {'$shardnode_host', start, self(), cart2, <<"t1">>, undefined, 1, items},
    {_, #{}, unchanged, continue} = done(<<"t1">>, 1),
    ?assertEqual({error, {not_an_entity_module, lists}}, shardnode_entity_host:add_types(#{x => lists})),
    ?assertEqual({error, {bad_type, "x"}}, shardnode_entity_host:add_types(#{"x" => sn_cart})).

a_type_not_hosted_is_refused(Config) ->
    D = ?config(dispatcher, Config),
    D ! {'$shardnode_host', start, self(), no_such_type, <<"x">>, undefined, 1, items},
    receive {'$shardnode_crashed', <<"x">>, undefined, {unknown_type, no_such_type}} -> ok
    after ?WAIT -> ct:fail(not_refused)
    end.

%% examples/cart.erl, the Erlang example, as a user would host it.
the_erlang_example_runs_under_the_host(Config) ->
    {ok, Root} = c_driver:project_root(["examples/cart.erl"]),
    Src = filename:join(Root, "examples/cart.erl"),
    {ok, cart, Bin} = compile:file(Src, [binary, return_errors, warnings_as_errors]),
    {module, cart} = code:load_binary(cart, Src, Bin),
    ok = shardnode_entity_host:add_types(#{example_cart => cart}),
    {ok, D} = shardnode_entity_dispatcher:start_link(?config(cnode, Config), shardnode_entity_host:types()),
    unlink(D),
    D ! {'$shardnode_host', start, self(), example_cart, <<"e1">>, undefined, 1, {add, apple, 2}},
    {Pid, ok, {state, #{apple := 2}}, continue} = done(<<"e1">>, 1),
    Pid ! {'$shardnode_entity', 2, items},
    {Pid, #{apple := 2}, unchanged, continue} = done(<<"e1">>, 2),
    Pid ! {'$shardnode_entity', 3, checkout},
    {Pid, {ok, #{apple := 2}}, {state, #{}}, stop} = done(<<"e1">>, 3),
    ok = sn_test:await(fun() -> not is_process_alive(Pid) end),
    exit(D, kill).

%% A real C node started with `host` set to this node: it says hello (the
%% host gives it a dispatcher), renews the lease so its entities keep
%% running, and when it is killed its entities end with it.
a_c_node_with_a_host_says_hello_and_renews_its_lease(Config) ->
    ok = shardnode_entity_host:add_types(#{cart => sn_cart}),
    Name = "hosted" ++ integer_to_list(erlang:unique_integer([positive])) ++ "@127.0.0.1",
    {ok, C} = shardnode:start_node(#{name => Name, types => [counter],
                                     config => #{host => node(), heartbeat_interval_ms => 100,
                                                 failure_timeout_ms => 500}}),
    ok = sn_test:await(fun() -> lists:keymember(C, 1, shardnode_entity_host:dispatchers()) end),
    {C, D} = lists:keyfind(C, 1, shardnode_entity_host:dispatchers()),
    D ! {'$shardnode_host', start, self(), cart, <<"k1">>, undefined, 1, items},
    {Pid, _, unchanged, continue} = done(<<"k1">>, 1),
    {init, <<"k1">>, undefined, Pid} = event(),
    %% Past many heartbeats (and any one lease it gave): still running.
    timer:sleep(1500),
    true = is_process_alive(Pid),
    ok = shardnode:kill_node(C),
    ok = sn_test:await(fun() -> not is_process_alive(Pid) andalso not is_process_alive(D) end),
    ok = sn_test:await(fun() -> not lists:keymember(C, 1, shardnode_entity_host:dispatchers()) end),
    _ = Config,
    ok.

%% The batched protocol, as a C node that took the offer speaks it: the
%% items of one batch go out in order (starts, messages, a stop), and the
%% completions come back to each region in batches, each entity's in the
%% order of its messages. Before `batches', completions come one by one.
a_batch_is_handed_out_and_completions_come_back_batched_in_order(Config) ->
    D = ?config(dispatcher, Config),
    Self = self(),
    D ! {'$shardnode_host', batch, [{start, Self, cart, <<"b0">>, undefined, 1, items}]},
    {_, #{}, unchanged, continue} = done(<<"b0">>, 1),
    {init, <<"b0">>, undefined, _} = event(),
    D ! {'$shardnode_host', batches},
    D ! {'$shardnode_host', batch, [{start, Self, cart, <<"b1">>, undefined, 1, items},
                                    {start, Self, cart, <<"b2">>, undefined, 1, items}]},
    Started = batched(2),
    [{<<"b1">>, P1}, {<<"b2">>, P2}] =
        lists:sort([{Id, P} || {'$shardnode_done', Id, P, 1, #{}, unchanged, continue} <- Started]),
    D ! {'$shardnode_host', batch, [{P1, 2, {add, pear, 1}}, {P2, 2, {add, fig, 2}}, {P1, 3, items},
                                    {stop, P2, passivate}]},
    Dones = batched(3),
    [{2, ok, {state, _}}, {3, #{pear := 1}, unchanged}] =
        [{S, R, C} || {'$shardnode_done', <<"b1">>, Pid, S, R, C, continue} <- Dones, Pid =:= P1],
    [{2, ok}] = [{S, R} || {'$shardnode_done', <<"b2">>, Pid, S, R, _, continue} <- Dones, Pid =:= P2],
    ok = sn_test:await(fun() -> not is_process_alive(P2) end),
    %% A crash comes in its region's batch too, after the completions.
    P1 ! {'$shardnode_entity', 4, crash},
    [{'$shardnode_crashed', <<"b1">>, P1, _}] = batched(1).

%% A real C node naming this host: it takes the host's offer, and its
%% entities' messages and completions go batched (the dispatcher's state
%% says so), and are answered.
a_c_node_takes_the_offer_of_batches(Config) ->
    ok = shardnode_entity_host:add_types(#{cart => sn_cart}),
    Name = "batched" ++ integer_to_list(erlang:unique_integer([positive])) ++ "@127.0.0.1",
    {ok, C} = shardnode:start_node(#{name => Name, types => [counter],
                                     config => #{host => node()}}),
    ok = sn_test:await(fun() -> lists:keymember(C, 1, shardnode_entity_host:dispatchers()) end),
    {C, D} = lists:keyfind(C, 1, shardnode_entity_host:dispatchers()),
    ok = sn_test:await(fun() -> shardnode_entity_dispatcher:batched(D) end),
    ok = shardnode:kill_node(C),
    ok = sn_test:await(fun() -> not is_process_alive(D) end),
    _ = Config,
    ok.

%% ---- helpers ----

%% A process on CNode that hands this process everything it gets, as the
%% C node's side of the hello would.
relay_on(CNode) ->
    {Mod, Bin, File} = code:get_object_code(?MODULE),
    {module, Mod} = erpc:call(CNode, code, load_binary, [Mod, File, Bin]),
    erpc:call(CNode, erlang, spawn, [?MODULE, relay, [self()]]).

relay(To) ->
    receive M -> To ! {relayed, M}, relay(To) end.

host_msg() ->
    receive
        {relayed, {'$shardnode_host', welcome, D, Types}} -> {welcome, D, Types};
        {relayed, {'$shardnode_host', types, Types}} -> {types, Types}
    after ?WAIT -> ct:fail(no_answer_from_the_host)
    end.

%% Starts entity Id with `items' as its first message (seq 1).
start(Config, Id) ->
    ?config(dispatcher, Config) ! {'$shardnode_host', start, self(), cart, Id, undefined, 1, items},
    {Pid, _, unchanged, continue} = done(Id, 1),
    {init, Id, undefined, Pid} = event(),
    Pid.

done(Id, Seq) ->
    receive
        {'$shardnode_done', Id, Pid, Seq, Reply, Change, Next} -> {Pid, Reply, Change, Next};
        %% From the dispatcher of a C node that takes batches.
        {'$shardnode_batch', [{'$shardnode_done', Id, Pid, Seq, Reply, Change, Next}]} -> {Pid, Reply, Change, Next}
    after ?WAIT -> ct:fail({no_completion, Id, Seq})
    end.

%% The messages of the batches that come, until there are N of them.
batched(N) -> batched(N, []).

batched(N, Got) when length(Got) >= N -> Got;
batched(N, Got) ->
    receive {'$shardnode_batch', Msgs} when is_list(Msgs) -> batched(N, Got ++ Msgs)
    after ?WAIT -> ct:fail({batched, N, Got})
    end.

event() ->
    receive {sn_cart, E} -> E after ?WAIT -> ct:fail(no_event) end.
