%% A shopping cart written against shardnode_entity, for the suites: items
%% added and listed, a checkout that ends the cart, a crash or an exit
%% (exit/1 with the reason given) on request, and a reminder sent to itself (handle_info/2) that is counted. Each process
%% reports init and terminate to the process registered as sn_cart_events
%% on its node, when there is one.
-module(sn_cart).
-behaviour(shardnode_entity).

-export([init/2, handle/2, handle_info/2, terminate/2]).

init(Id, Stored) ->
    event({init, Id, Stored, self()}),
    {ok, case Stored of undefined -> #{items => #{}, reminders => 0}; S -> S end}.

handle({add, Item, N}, #{items := Items} = S) ->
    {reply, ok, S#{items := maps:update_with(Item, fun(M) -> M + N end, N, Items)}};
handle(items, #{items := Items} = S) ->
    {reply, Items, S};
handle({remind_me, Ms}, S) ->
    erlang:send_after(Ms, self(), reminder),
    {reply, ok, S};
handle(reminders, #{reminders := R} = S) ->
    {reply, R, S};
handle(checkout, #{items := Items} = S) ->
    {stop, {ok, Items}, S#{items := #{}}};
handle(crash, _S) ->
    erlang:error(asked_to_crash);
handle({exit, Reason}, _S) ->
    exit(Reason).

handle_info(reminder, #{reminders := R} = S) ->
    {noreply, S#{reminders := R + 1}};
handle_info(_, S) ->
    {noreply, S}.

terminate(Reason, S) ->
    event({terminate, Reason, S, self()}).

event(E) ->
    case whereis(sn_cart_events) of
        undefined -> ok;
        Pid -> Pid ! {sn_cart, E}, ok
    end.
