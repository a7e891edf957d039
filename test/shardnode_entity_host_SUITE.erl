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

-export([all/0, init_per_testcase/2, end_per_testcase/2]).
-export([a_first_message_starts_the_entity_from_what_was_stored/1,
         messages_are_answered_in_order_with_their_state_changes/1,
         an_entity_keeps_its_own_timers/1,
         stop_and_checkout_run_terminate/1,
         a_crash_is_told_to_the_region_with_its_reason/1,
         the_c_node_going_down_ends_its_entities/1,
         a_lapsed_lease_ends_the_entities/1]).

-define(WAIT, 5000).

all() ->
    [a_first_message_starts_the_entity_from_what_was_stored,
     messages_are_answered_in_order_with_their_state_changes,
     an_entity_keeps_its_own_timers,
     stop_and_checkout_run_terminate,
     a_crash_is_told_to_the_region_with_its_reason,
     the_c_node_going_down_ends_its_entities,
     a_lapsed_lease_ends_the_entities].

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
    %% Killed, not crashed: the region learns of it from its lease.
    receive {'$shardnode_crashed', _, _, _} = C -> ct:fail({unexpected, C}) after 200 -> ok end.

%% ---- helpers ----

%% Starts entity Id with `items' as its first message (seq 1).
start(Config, Id) ->
    ?config(dispatcher, Config) ! {'$shardnode_host', start, self(), cart, Id, undefined, 1, items},
    {Pid, _, unchanged, continue} = done(Id, 1),
    {init, Id, undefined, Pid} = event(),
    Pid.

done(Id, Seq) ->
    receive
        {'$shardnode_done', Id, Pid, Seq, Reply, Change, Next} -> {Pid, Reply, Change, Next}
    after ?WAIT -> ct:fail({no_completion, Id, Seq})
    end.

event() ->
    receive {sn_cart, E} -> E after ?WAIT -> ct:fail(no_event) end.
