%% @private
%% @doc The host of entities written in Erlang or Elixir on this BEAM node
%% (docs/architecture.md, "Entities written in Erlang and Elixir"),
%% registered as `shardnode_entity_host': it keeps the types this node
%% hosts (type => module) and one dispatcher ({@link
%% shardnode_entity_dispatcher}) per C node that said hello, so several C
%% nodes naming this host keep their entities apart.
%%
%% From a C node: `{'$shardnode_host', hello, CNode, From}', sent until
%% answered. The answer, to `From': `{'$shardnode_host', welcome,
%% Dispatcher, Types}' with the types hosted here (a list of atoms, maybe
%% empty), then `{'$shardnode_host', batches, Dispatcher}': the
%% dispatcher takes the regions' messages batched (a C node of an older
%% release drops it and sends one message each). When the types change, every C node that said hello hears
%% `{'$shardnode_host', types, Types}' at its `From'. A hello from another
%% `From' (the C node restarted: a new incarnation) gets a dispatcher of its
%% own; the old one ends with its connection.
-module(shardnode_entity_host).
-behaviour(gen_server).

-export([start_link/0, add_types/1, types/0, dispatchers/0]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2]).

-define(SERVER, ?MODULE).

-record(host, {types = #{} :: #{atom() => module()},
               %% per C node link (the hello's From): its node and dispatcher
               links = #{} :: #{pid() => {node(), pid()}}}).

-spec start_link() -> {ok, pid()} | {error, term()}.
start_link() ->
    gen_server:start_link({local, ?SERVER}, ?MODULE, [], []).

%% @doc Hosts these types here from now on (added to the ones hosted
%% already; a type given again takes its new module). Every module must
%% be loadable and export `init/2' and `handle/2'.
-spec add_types(#{atom() => module()}) -> ok | {error, {not_an_entity_module, term()} | {bad_type, term()}}.
add_types(Types) when is_map(Types) ->
    case [Error || {T, M} <- maps:to_list(Types), Error <- [check(T, M)], Error =/= ok] of
        [] -> gen_server:call(?SERVER, {add_types, Types});
        [Error | _] -> Error
    end.

%% @doc The types hosted here.
-spec types() -> #{atom() => module()}.
types() ->
    gen_server:call(?SERVER, types).

%% @doc The dispatchers, one per C node incarnation that said hello:
%% `{CNode, Dispatcher}' each.
-spec dispatchers() -> [{node(), pid()}].
dispatchers() ->
    gen_server:call(?SERVER, dispatchers).

check(Type, _Module) when not is_atom(Type) ->
    {error, {bad_type, Type}};
check(_Type, Module) when is_atom(Module) ->
    case code:ensure_loaded(Module) of
        {module, Module} ->
            case erlang:function_exported(Module, init, 2) andalso
                erlang:function_exported(Module, handle, 2) of
                true -> ok;
                false -> {error, {not_an_entity_module, Module}}
            end;
        _ -> {error, {not_an_entity_module, Module}}
    end;
check(_Type, Module) ->
    {error, {not_an_entity_module, Module}}.

-spec init([]) -> {ok, #host{}}.
init([]) ->
    process_flag(trap_exit, true),
    {ok, #host{}}.

-spec handle_call(term(), gen_server:from(), #host{}) -> {reply, term(), #host{}}.
handle_call({add_types, New}, _From, #host{types = Types, links = Links} = H) ->
    All = maps:merge(Types, New),
    _ = [begin
             D ! {'$shardnode_host', types, All},
             Link ! {'$shardnode_host', types, maps:keys(All)}
         end || {Link, {_, D}} <- maps:to_list(Links)],
    {reply, ok, H#host{types = All}};
handle_call(types, _From, #host{types = Types} = H) ->
    {reply, Types, H};
handle_call(dispatchers, _From, #host{links = Links} = H) ->
    {reply, [{C, D} || {_, {C, D}} <- maps:to_list(Links)], H};
handle_call(_Other, _From, H) ->
    {reply, {error, bad_request}, H}.

-spec handle_cast(term(), #host{}) -> {noreply, #host{}}.
handle_cast(_Msg, H) ->
    {noreply, H}.

-spec handle_info(term(), #host{}) -> {noreply, #host{}}.
handle_info({'$shardnode_host', hello, CNode, From}, #host{types = Types, links = Links} = H)
  when is_atom(CNode), is_pid(From), node(From) =:= CNode ->
    case Links of
        #{From := {_, D}} ->
            welcome(From, D, Types),
            {noreply, H};
        #{} ->
            case shardnode_entity_dispatcher:start_link(CNode, Types) of
                {ok, D} ->
                    welcome(From, D, Types),
                    {noreply, H#host{links = Links#{From => {CNode, D}}}};
                {error, Reason} ->
                    logger:warning("shardnode: no dispatcher for ~p: ~tp", [CNode, Reason]),
                    {noreply, H}
            end
    end;
handle_info({'EXIT', D, _Reason}, #host{links = Links} = H) ->
    {noreply, H#host{links = maps:filter(fun(_, {_, Disp}) -> Disp =/= D end, Links)}};
handle_info(_Other, H) ->
    {noreply, H}.

%% The welcome, and then the offer of batches: a C node that knows them
%% sends its regions' messages for this host in one message a turn and
%% asks for its completions the same way (shardnode_entity_dispatcher);
%% one that does not drops the offer, and both go on one message each.
welcome(From, Dispatcher, Types) ->
    From ! {'$shardnode_host', welcome, Dispatcher, maps:keys(Types)},
    From ! {'$shardnode_host', batches, Dispatcher},
    ok.
