%% @doc The behaviour of an entity written in Erlang or Elixir.
%%
%% A module implementing it describes one entity type: what an entity
%% starts from, and how it answers each message. The C node does
%% everything around the entities (routing by id, shards, moves with
%% their state, the stores, passivation); the entities run as processes
%% on the BEAM node that hosts the type: the node that started the C node
%% with `shardnode:start_node(#{entities => #{cart => cart}})', or one
%% that called `shardnode:host_entities/1' for a C node started with
%% `--host' (docs/contract.md, "Entities written in Erlang and Elixir").
%%
%% A shopping cart:
%%
%% ```
%% -module(cart).
%% -behaviour(shardnode_entity).
%% -export([init/2, handle/2]).
%%
%% init(_Id, undefined) -> {ok, #{}};          % a new cart
%% init(_Id, Items) -> {ok, Items}.            % carried on a move, or stored
%%
%% handle({add, Item, N}, Items) ->
%%     New = maps:update_with(Item, fun(M) -> M + N end, N, Items),
%%     {reply, ok, New};
%% handle(items, Items) ->
%%     {reply, Items, Items};                  % unchanged: nothing is written
%% handle(checkout, Items) ->
%%     {stop, {ok, Items}, #{}}.
%% '''
%%
%% The same in Elixir:
%%
%% ```
%% defmodule MyApp.Cart do
%%   @@behaviour :shardnode_entity
%%
%%   def init(_id, :undefined), do: {:ok, %{}}
%%   def init(_id, items), do: {:ok, items}
%%
%%   def handle({:add, item, n}, items),
%%     do: {:reply, :ok, Map.update(items, item, n, &(&1 + n))}
%%   def handle(:items, items), do: {:reply, items, items}
%%   def handle(:checkout, items), do: {:stop, {:ok, items}, %{}}
%% end
%% '''
%%
%% Callers need nothing of this module: `gen_server:call({cart, CNode},
%% {Id, Msg})' and `{cart, CNode} ! {Id, Msg}' reach the entity `Id' from
%% any node, as for the built-in types.
-module(shardnode_entity).

-export_type([id/0, state/0, reply/0]).

-type id() :: term().
%% The entity's id, as the caller gave it (`{Id, Msg}').

-type state() :: term().
%% Any term. It is what moves with the entity's shard and what a store
%% keeps (as `term_to_binary/1' would encode it).

-type reply() :: term().
%% What the caller gets: the reply of its `gen_server:call', or, for a
%% tell, `{Type, Id, Reply}' sent to the teller.

%% Starts an entity: `Stored' is the state it had (carried on a move, or
%% loaded from the store), or `undefined' for a new one.
-callback init(Id :: id(), Stored :: state() | undefined) -> {ok, state()}.

%% Answers one message. Messages come one at a time, in order per sender.
%% `{stop, Reply, NewState}' answers and ends the entity (its state is kept
%% as with passivation). A `NewState' equal to `State' (`=:=') writes
%% nothing to the store.
-callback handle(Msg :: term(), State :: state()) ->
    {reply, reply(), state()} | {stop, reply(), state()}.

%% The entity process's other messages: its own timers
%% (`erlang:send_after/3'), replies of processes it called.
-callback handle_info(Info :: term(), State :: state()) ->
    {noreply, state()} | {stop, state()}.

%% The entity stops. `Reason': `normal' after its own `{stop, ...}';
%% `passivate' (asked, idle, or beyond max_active_entities); `delete';
%% `moved' (its shard went to another member); `shutdown' (its node
%% stops); `store_unavailable' (its new state could not be written: the
%% next message starts it from the stored one). A crash, or its host's
%% lease running out, ends it without terminate/2.
-callback terminate(Reason :: normal | passivate | delete | moved | shutdown | store_unavailable,
                    State :: state()) -> term().

-optional_callbacks([handle_info/2, terminate/2]).
