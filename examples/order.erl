%% An order as an entity written in Erlang (shardnode_entity): the entity
%% of examples/order_SUITE.erl, the suite a team would write with
%% shardnode_ct. Its state is what was ordered and what has been paid; a
%% payment past the total is refused, so a payment applied twice shows.
-module(order).
-behaviour(shardnode_entity).

-export([init/2, handle/2]).

init(_Id, undefined) -> {ok, #{total => 0, paid => 0}};
init(_Id, Stored) -> {ok, Stored}.

handle({create, Total}, S) when is_integer(Total), Total > 0 ->
    {reply, ok, S#{total := Total}};
handle({pay, Amount}, #{total := Total, paid := Paid} = S) when is_integer(Amount), Amount > 0 ->
    case Paid + Amount =< Total of
        true -> {reply, ok, S#{paid := Paid + Amount}};
        false -> {reply, {error, overpaid}, S}
    end;
handle(status, S) ->
    {reply, S, S};
handle(_Other, S) ->
    {reply, {error, unknown_request}, S}.
