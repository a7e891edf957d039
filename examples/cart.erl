%% A shopping cart as an entity written in Erlang (shardnode_entity): the
%% example of docs/architecture.md's "Entities written in Erlang and
%% Elixir". Its state is a map of item => count; listing leaves it
%% unchanged (nothing to write), checkout empties the cart and ends it.
-module(cart).
-behaviour(shardnode_entity).

-export([init/2, handle/2]).

init(_Id, undefined) -> {ok, #{}};
init(_Id, Items) -> {ok, Items}.

handle({add, Item, N}, Items) when is_integer(N), N > 0 ->
    {reply, ok, maps:update_with(Item, fun(M) -> M + N end, N, Items)};
handle({remove, Item}, Items) ->
    {reply, ok, maps:remove(Item, Items)};
handle(items, Items) ->
    {reply, Items, Items};
handle(checkout, Items) ->
    {stop, {ok, Items}, #{}};
handle(_Other, Items) ->
    {reply, {error, unknown_request}, Items}.
