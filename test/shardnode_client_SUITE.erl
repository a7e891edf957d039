%% The Erlang client (docs/contract.md "The Erlang client"):
%% shardnode:call/4,5 and multi_call/3,4 answer as gen_server:call does,
%% cost the calling node one distribution message out and one back for
%% many calls, fail fast (noproc, noconnection) and never leave a late
%% reply in a caller's mailbox.
-module(shardnode_client_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([suite/0, all/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([calls_and_multi_calls_answer_in_order/1,
         many_calls_take_one_message_each_way/1,
         calls_reach_entities_on_every_member/1,
         an_unknown_type_is_noproc_at_once/1,
         a_lost_node_is_noconnection_at_once/1,
         a_timed_out_call_leaves_no_late_reply/1,
         big_and_malformed_requests_are_answered_in_place/1,
         with_options_a_call_goes_on_through_the_next_member/1,
         with_options_a_call_waits_for_a_member_started_again/1,
         with_options_what_may_have_happened_is_tried_again_only_if_idempotent/1]).

suite() -> [{timetrap, {minutes, 2}}].

all() ->
    [calls_and_multi_calls_answer_in_order,
     many_calls_take_one_message_each_way,
     calls_reach_entities_on_every_member,
     an_unknown_type_is_noproc_at_once,
     a_lost_node_is_noconnection_at_once,
     a_timed_out_call_leaves_no_late_reply,
     big_and_malformed_requests_are_answered_in_place,
     with_options_a_call_goes_on_through_the_next_member,
     with_options_a_call_waits_for_a_member_started_again,
     with_options_what_may_have_happened_is_tried_again_only_if_idempotent].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(shardnode),
    Config.

end_per_suite(_Config) ->
    ?assertEqual([], shardnode:which_nodes()),
    ok.

init_per_testcase(many_calls_take_one_message_each_way, Config) ->
    Port = shardnode_ct:free_port(),
    {[C], Config1} = shardnode_ct:start_nodes(Config, [#{config => #{metrics_port => Port}}]),
    [{cnode, C}, {metrics_port, Port} | Config1];
init_per_testcase(calls_reach_entities_on_every_member, Config) ->
    Shards = #{config => #{number_of_shards => 20}},
    {[A], Config1} = shardnode_ct:start_nodes(Config, [Shards]),
    {[B], Config2} = shardnode_ct:start_nodes(Config1, [Shards#{join => [A]}]),
    [{cnode, A}, {other, B} | Config2];
%% max_message_bytes of 2 MiB: a request past it is cheap to make.
init_per_testcase(big_and_malformed_requests_are_answered_in_place, Config) ->
    {[C], Config1} = shardnode_ct:start_nodes(Config, [#{config => #{max_message_bytes => 2097152}}]),
    [{cnode, C} | Config1];
init_per_testcase(with_options_a_call_goes_on_through_the_next_member, Config) ->
    %% a member killed is downed in about 2 s, so the others then stop
    %% cleanly (a leave hands shards off through the coordinator)
    {Nodes, Config1} = shardnode_ct:start_cluster(Config, 3, #{config => #{number_of_shards => 12,
                                                                            heartbeat_interval_ms => 200,
                                                                            failure_timeout_ms => 1000,
                                                                            stable_after_ms => 1000}}),
    [{cluster, Nodes} | Config1];
init_per_testcase(with_options_a_call_waits_for_a_member_started_again, Config) ->
    {C, Sup} = shardnode_ct:start_supervised(Config, #{}),
    [{cnode, C}, {sup, Sup} | Config];
init_per_testcase(_Case, Config) ->
    {[C], Config1} = shardnode_ct:start_nodes(Config, [#{}]),
    [{cnode, C} | Config1].

end_per_testcase(with_options_a_call_waits_for_a_member_started_again, Config) ->
    shardnode_ct:stop_supervised(?config(sup, Config));
end_per_testcase(_Case, Config) ->
    shardnode_ct:stop_all_nodes(Config).

%%====================================================================
%% Cases
%%====================================================================

%% A request the node could not take (over its max_message_bytes) is
%% {error, message_too_large} at once, never sent; a big one it can take
%% goes alone and is answered as any; a multi_call element that is no
%% {EntityId, Msg} is answered {error, {bad_request, Element}} in its
%% place, and the others as always. The client serves on.
big_and_malformed_requests_are_answered_in_place(Config) ->
    C = ?config(cnode, Config),
    TooBig = binary:copy(<<0>>, 3 * 1048576),
    Big = binary:copy(<<1>>, 1536 * 1024),
    T0 = erlang:monotonic_time(millisecond),
    ?assertEqual({error, message_too_large}, shardnode:call(C, kv, "k", {put, v, TooBig}, 30000)),
    ?assert(erlang:monotonic_time(millisecond) - T0 < 1000, "answered without waiting"),
    ?assertEqual(ok, shardnode:call(C, kv, "k", {put, v, Big}, 30000)),
    ?assertEqual({ok, Big}, shardnode:call(C, kv, "k", {get, v}, 30000)),
    Client = shardnode_clients:client(C),
    ?assertEqual([1, {error, {bad_request, oops}}, {error, message_too_large}, 0, 2,
                  {error, {bad_request, {a, b, c}}}],
                 shardnode:multi_call(C, counter, [{m, incr}, oops, {m, {incr, TooBig}},
                                                   {m2, {incr, 0}}, {m, incr}, {a, b, c}])),
    ?assertEqual([{error, {bad_request, x}}], shardnode:multi_call(C, counter, [x])),
    %% Calls to one entity stay in the order made, a big one among them.
    ?assertEqual([ok, ok, {ok, Big}],
                 shardnode:multi_call(C, kv, [{"o", {put, a, 1}}, {"o", {put, a, Big}}, {"o", {get, a}}], 30000)),
    ?assertEqual(Client, shardnode_clients:client(C), "the same client serves on"),
    ?assertEqual(3, shardnode:call(C, counter, m, incr)).

%% Replies are the entities' own, errors included; a multi-call's come in
%% the order of its requests, the same id twice handled in that order.
calls_and_multi_calls_answer_in_order(Config) ->
    C = ?config(cnode, Config),
    ?assertEqual(1, shardnode:call(C, counter, <<"a">>, incr)),
    ?assertEqual(2, shardnode:call(C, counter, <<"a">>, incr, 1000)),
    ?assertEqual([1, 3, 2, 4, 1], shardnode:multi_call(C, counter, [{b, incr}, {<<"a">>, incr}, {b, incr},
                                                                 {<<"a">>, incr}, {"c", incr}])),
    ?assertEqual([], shardnode:multi_call(C, counter, [])),
    ?assertEqual(hello, shardnode:call(C, echo, x, hello)),
    ?assertEqual(ok, shardnode:call(C, kv, "cart", {put, apples, 3})),
    ?assertEqual([{ok, 3}, {error, not_found}],
                 shardnode:multi_call(C, kv, [{"cart", {get, apples}}, {"cart", {get, pears}}])),
    ?assertMatch({error, {unknown_message, _}}, shardnode:call(C, counter, <<"a">>, no_such_message)),
    ?assertMatch({error, {bad_entity_id, _}}, shardnode:call(C, counter, self(), incr)),
    %% as gen_server:call sees the same entities
    ?assertEqual(4, gen_server:call({counter, C}, {<<"a">>, get})),
    %% more calls than one message carries (1000): several messages, the
    %% replies still in order, each entity's increments in the order made
    Keys = [{many, K rem 7} || K <- lists:seq(1, 2500)],
    {Expected, _} = lists:mapfoldl(fun(Key, Seen) ->
                                           N = maps:get(Key, Seen, 0) + 1,
                                           {N, Seen#{Key => N}}
                                   end, #{}, Keys),
    ?assertEqual(Expected, shardnode:multi_call(C, counter, [{Key, incr} || Key <- Keys])),
    %% many callers at once, each its own replies
    Self = self(),
    Callers = [spawn_link(fun() ->
                                  Id = {caller, K},
                                  Got = [shardnode:call(C, counter, Id, incr) || _ <- lists:seq(1, 200)],
                                  Self ! {self(), Got}
                          end) || K <- lists:seq(1, 16)],
    [receive {P, Got} -> ?assertEqual(lists:seq(1, 200), Got) end || P <- Callers],
    ok.

%% 500 calls in one multi_call reach the node as one message and come back
%% as one: the node's distribution packet counters move by a message or
%% two each way, not by 500 (a tick may pass meanwhile).
many_calls_take_one_message_each_way(Config) ->
    C = ?config(cnode, Config),
    Port = ?config(metrics_port, Config),
    ?assertEqual(1, shardnode:call(C, counter, warm, incr)),
    {In0, Out0} = packets(Port),
    Replies = shardnode:multi_call(C, counter, [{K, incr} || K <- lists:seq(1, 500)]),
    ?assertEqual(lists:duplicate(500, 1), Replies),
    {In1, Out1} = packets(Port),
    ct:pal("500 calls: ~b packets in, ~b out", [In1 - In0, Out1 - Out0]),
    ?assert(In1 - In0 =< 2),
    ?assert(Out1 - Out0 =< 2),
    %% one call alone: one message each way too
    ?assertEqual(2, shardnode:call(C, counter, warm, incr)),
    {In2, Out2} = packets(Port),
    ?assert(In2 - In1 =< 2),
    ?assert(Out2 - Out1 =< 2),
    ok.

%% With two members, a multi-call's requests whose shards live on the
%% other one are answered from there (the other member replies to the
%% client itself); every reply is right and in order.
calls_reach_entities_on_every_member(Config) ->
    A = ?config(cnode, Config),
    B = ?config(other, Config),
    ok = sn_test:await(fun() -> length(element(2, shardnode:members(A))) =:= 2 end),
    Ids = lists:seq(1, 300),
    ?assertEqual(lists:duplicate(300, 1), shardnode:multi_call(A, counter, [{K, incr} || K <- Ids])),
    ?assertEqual(lists:duplicate(300, 2), shardnode:multi_call(B, counter, [{K, incr} || K <- Ids])),
    {ok, OnB} = shardnode:shard_region_state(B, counter),
    ?assert(lists:sum([length(E) || E <- maps:values(OnB)]) > 0),
    {ok, OnA} = shardnode:shard_region_state(A, counter),
    ?assert(lists:sum([length(E) || E <- maps:values(OnA)]) > 0),
    ok.

%% No region of that type on the node: {error, noproc} at once, not at the
%% timeout; the node's other types still answer.
an_unknown_type_is_noproc_at_once(Config) ->
    C = ?config(cnode, Config),
    {Us, R} = timer:tc(fun() -> shardnode:call(C, no_such_type, a, incr, 30000) end),
    ?assertEqual({error, noproc}, R),
    ?assert(Us < 5000000),
    ?assertEqual({error, noproc}, shardnode:multi_call(C, no_such_type, [{a, incr}, {b, incr}], 30000)),
    ?assertEqual(1, shardnode:call(C, counter, a, incr)),
    %% and a node nobody runs: noconnection at once
    Gone = list_to_atom(shardnode_ct:unique_name("nobody") ++ "@127.0.0.1"),
    {Us2, R2} = timer:tc(fun() -> shardnode:call(Gone, counter, a, incr, 30000) end),
    ?assertEqual({error, noconnection}, R2),
    ?assert(Us2 < 5000000),
    ok.

%% Callers waiting on a node that stops answering (SIGSTOP) and is then
%% killed get {error, noconnection} as soon as the connection closes, long
%% before their timeout.
a_lost_node_is_noconnection_at_once(Config) ->
    C = ?config(cnode, Config),
    ?assertEqual(1, shardnode:call(C, counter, a, incr)),
    ok = shardnode_ct:pause(C),
    Self = self(),
    Callers = [spawn_link(fun() ->
                                  R = case K rem 2 of
                                          0 -> shardnode:call(C, counter, K, incr, 60000);
                                          1 -> shardnode:multi_call(C, counter, [{K, incr}, {a, get}], 60000)
                                      end,
                                  Self ! {self(), R, erlang:monotonic_time(millisecond)}
                          end) || K <- lists:seq(1, 16)],
    %% every caller is waiting for its reply
    ok = sn_test:await(fun() ->
                                    lists:all(fun(P) -> process_info(P, current_function) =:=
                                                            {current_function, {shardnode_client, attempt, 5}}
                                                            orelse process_info(P, current_function) =:=
                                                            {current_function, {shardnode_client, multi_call, 4}}
                                              end, Callers)
                            end),
    Killed = erlang:monotonic_time(millisecond),
    ok = shardnode:kill_node(C),
    [receive
         {P, R, At} ->
             ?assertEqual({error, noconnection}, R),
             ?assert(At - Killed < 10000)
     end || P <- Callers],
    ok.

%% A call that times out returns {error, timeout}; its reply, sent once
%% the node goes on, never lands in the caller's mailbox.
a_timed_out_call_leaves_no_late_reply(Config) ->
    C = ?config(cnode, Config),
    ?assertEqual(1, shardnode:call(C, counter, a, incr)),
    ok = shardnode_ct:pause(C),
    ?assertEqual({error, timeout}, shardnode:call(C, counter, a, incr, 200)),
    ?assertEqual({error, timeout}, shardnode:multi_call(C, counter, [{a, incr}, {b, incr}], 200)),
    ok = shardnode_ct:resume(C),
    %% the node answers the calls it holds, in order, before this one
    ?assertEqual(3, shardnode:call(C, counter, a, get)),
    ?assertEqual({messages, []}, process_info(self(), messages)),
    ok.

%% A call with options through members of which the first was killed a
%% moment ago: the request could not leave for it (no connection), so it
%% goes at once through the next, and is answered well within the call's
%% time. Without options the same call is {error, noconnection}.
with_options_a_call_goes_on_through_the_next_member(Config) ->
    [A, B, C] = ?config(cluster, Config),
    %% an entity whose shard is not on A: its answer needs no fail-over
    Ids = lists:seq(1, 60),
    ?assertEqual([1 || _ <- Ids], shardnode:multi_call(B, counter, [{K, incr} || K <- Ids])),
    Homes = shardnode_ct:shard_homes(B, counter),
    Id = hd([K || K <- Ids, maps:get(shardnode:shard_id(K, 12), Homes, [A]) =/= [A]]),
    ?assertEqual(2, shardnode:call(A, counter, Id, incr)),
    ok = shardnode:kill_node(A),
    ?assertEqual({error, noconnection}, shardnode:call(A, counter, Id, get, 5000)),
    T0 = erlang:monotonic_time(millisecond),
    ?assertEqual(3, shardnode:call([A, B, C], counter, Id, incr, #{timeout => 20000, attempt_timeout => 5000})),
    ?assert(erlang:monotonic_time(millisecond) - T0 < 2000, "answered through B without waiting"),
    ok = shardnode_ct:await_member_status(B, A, down, 30000).

%% A member killed and started again at once by its supervisor: a call
%% with options made as it dies is tried again until the member is back,
%% and answered; without options it is {error, noconnection} at once.
with_options_a_call_waits_for_a_member_started_again(Config) ->
    C = ?config(cnode, Config),
    ?assertEqual(1, shardnode:call(C, counter, a, incr)),
    {ok, Old} = shardnode:os_pid(C),
    [] = os:cmd("kill -9 " ++ integer_to_list(Old)),
    ok = sn_test:await(fun() -> shardnode:call(C, counter, a, get, 1000) =:= {error, noconnection} end),
    %% started afresh, without a store: the counter starts again from 0
    ?assertEqual(1, shardnode:call(C, counter, a, incr, #{timeout => 30000, attempt_timeout => 5000})),
    ?assertNotEqual({ok, Old}, shardnode:os_pid(C)),
    ok.

%% A call that times out may have been handled: with options it still
%% ends at its attempt's timeout — the message went once — unless it is
%% marked idempotent, when it is tried until the call's whole time.
with_options_what_may_have_happened_is_tried_again_only_if_idempotent(Config) ->
    C = ?config(cnode, Config),
    ?assertEqual(1, shardnode:call(C, counter, a, incr)),
    ok = shardnode_ct:pause(C),
    T0 = erlang:monotonic_time(millisecond),
    ?assertEqual({error, timeout}, shardnode:call(C, counter, a, incr, #{timeout => 5000, attempt_timeout => 200})),
    T1 = erlang:monotonic_time(millisecond),
    ?assert(T1 - T0 < 2000, "ended at the attempt's timeout, not the call's"),
    ?assertEqual({error, timeout}, shardnode:call(C, counter, a, get, #{timeout => 1500, attempt_timeout => 200,
                                                                         idempotent => true})),
    ?assert(erlang:monotonic_time(millisecond) - T1 >= 1400, "tried again until the call's time was up"),
    ok = shardnode_ct:resume(C),
    %% the incr that timed out was handled once, when the node went on
    ?assertEqual(2, shardnode:call(C, counter, a, get)),
    ok.

packets(Port) ->
    {ok, Page} = shardnode_ct:metrics_page(Port),
    {shardnode_ct:metric_value(Page, <<"shardnode_dist_packets_total{direction=\"in\"}">>),
     shardnode_ct:metric_value(Page, <<"shardnode_dist_packets_total{direction=\"out\"}">>)}.
