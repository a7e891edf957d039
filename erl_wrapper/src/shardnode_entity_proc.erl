%% @private
%% @doc One entity of a type written in Erlang or Elixir ({@link
%% shardnode_entity}): a process on the host running the user's module,
%% one message at a time, for the region of a C node.
%%
%% The protocol with the region (docs/architecture.md, "Entities written
%% in Erlang and Elixir"): each message comes as `{'$shardnode_entity',
%% Seq, Msg}', and is answered with one completion, `{'$shardnode_done',
%% Id, self(), Seq, Reply, Change, Next}', to the region — or, when its C
%% node takes batches, to the dispatcher as `{'$shardnode_completed',
%% Region, Done}', which sends each region its completions in one
%% message. `Change' is `unchanged' (the new state `=:=' the old: nothing to write)
%% or `{state, NewState}', and `Next' is `continue' or `stop'. The region
%% answers the caller. `{'$shardnode_stop', Reason}' ends the entity
%% (passivation, a move, a delete, its node stopping): `terminate/2' runs,
%% and the process exits `normal'. A state changed or a stop chosen in
%% `handle_info/2' is sent as a completion numbered 0 (no message). Anything else goes to the module's
%% `handle_info/2', or is dropped if it has none. The message
%% `'$shardnode_wake'' is the region's own: it starts a remembered entity
%% (or a singleton's) with no message of anyone's, and is completed
%% without calling the module.
%%
%% A callback that raises, exits (`exit/1' with any reason, `normal'
%% too), or returns something else, ends the process with that reason; its
%% dispatcher ({@link shardnode_entity_dispatcher}) tells the region, which
%% answers a call in flight `{error, {entity_crashed, Reason}}'. The
%% process's own end (a stop chosen, or asked for) is `normal' as well, so
%% an `exit(normal)' of a callback is told to the dispatcher first:
%% `{'$shardnode_exit', self(), normal}'.
-module(shardnode_entity_proc).

-export([start/6]).

-record(entity, {dispatcher :: pid(),
                 region :: pid(),
                 %% where completions go: the region, or the dispatcher
                 %% that batches them for it
                 done_to :: pid(),
                 module :: module(),
                 %% Module:handle/2, looked up once: a call by a variable
                 %% module would look it up at every message
                 handle :: fun((term(), shardnode_entity:state()) -> term()),
                 id :: shardnode_entity:id(),
                 state :: shardnode_entity:state()}).

%% @doc Starts the entity `Id' of `Module' for `Region', from `Stored'
%% (`undefined': a new entity), and gives it its first message
%% `{Seq, Msg}'. Its completions go to `DoneTo': the region itself, or
%% the dispatcher, which batches them for the region
%% (`{'$shardnode_completed', Region, Done}'). The process is linked to its caller (the dispatcher,
%% which traps exits: an entity that ends does not end it, and a
%% dispatcher that ends takes its entities with it) and monitored by it.
%% Returns the process and the monitor.
-spec start(pid(), pid(), module(), shardnode_entity:id(), shardnode_entity:state() | undefined,
            {non_neg_integer(), term()}) -> {pid(), reference()}.
start(Region, DoneTo, Module, Id, Stored, First) ->
    Dispatcher = self(),
    E = #entity{dispatcher = Dispatcher, region = Region, done_to = DoneTo, module = Module,
                handle = fun Module:handle/2, id = Id},
    erlang:spawn_opt(fun() -> init(E, Stored, First) end, [link, monitor]).

%% A crash ends the process with the reason proc_lib would give it (an
%% exception's stack included), but no crash report: the C node logs the
%% crash, once, with the entity's type and id — one crash, one record.
%% (A plain process, not proc_lib's, and one whose exceptions are caught,
%% so the emulator does not log an uncaught error either.)
-spec init(#entity{}, shardnode_entity:state() | undefined, {non_neg_integer(), term()}) -> no_return().
init(#entity{module = Module, id = Id} = E, Stored, {Seq, Msg}) ->
    try
        {ok, State} = callback(fun() -> Module:init(Id, Stored) end, E),
        run(Seq, Msg, E#entity{state = State})
    catch
        exit:Reason -> exit(Reason);
        error:Reason:Stack -> exit({Reason, Stack});
        throw:Value:Stack -> exit({{nocatch, Value}, Stack})
    end.

%% Runs one of the module's callbacks. An `exit(normal)' in it would end
%% the process as quietly as its own end does, and the message it was
%% handling would never be answered: the dispatcher hears of it first
%% (messages from one process arrive in order, so before the 'DOWN'),
%% and then the process exits `normal' as it was asked to (links see
%% what the callback chose).
callback(Fun, E) ->
    try Fun()
    catch exit:normal -> exited_normal(E)
    end.

-spec exited_normal(#entity{}) -> no_return().
exited_normal(#entity{dispatcher = D}) ->
    D ! {'$shardnode_exit', self(), normal},
    exit(normal).

-spec loop(#entity{}) -> no_return().
loop(E) ->
    receive
        {'$shardnode_entity', Seq, Msg} ->
            run(Seq, Msg, E);
        {'$shardnode_stop', Reason} ->
            stop(Reason, E);
        Info ->
            info(Info, E)
    end.

-spec run(non_neg_integer(), term(), #entity{}) -> no_return().
run(Seq, '$shardnode_wake', #entity{state = State} = E) ->
    %% The region's own message: a remembered entity, or a singleton's,
    %% runs from when its shard lands, before anyone sends it anything.
    done(Seq, ok, State, State, continue, E),
    loop(E);
run(Seq, Msg, #entity{handle = Handle, state = State} = E) ->
    %% As callback/2 does, without a fun made for every message.
    case try Handle(Msg, State) catch exit:normal -> exited_normal(E) end of
        {reply, Reply, New} ->
            done(Seq, Reply, State, New, continue, E),
            loop(E#entity{state = New});
        {stop, Reply, New} ->
            done(Seq, Reply, State, New, stop, E),
            stop(normal, E#entity{state = New});
        Other ->
            exit({bad_return_value, Other})
    end.

done(Seq, Reply, Old, New, Next, #entity{region = R, done_to = R, id = Id}) ->
    R ! {'$shardnode_done', Id, self(), Seq, Reply, change(Old, New), Next},
    ok;
done(Seq, Reply, Old, New, Next, #entity{region = R, done_to = D, id = Id}) ->
    D ! {'$shardnode_completed', R, {'$shardnode_done', Id, self(), Seq, Reply, change(Old, New), Next}},
    ok.

%% What the entity did of its own accord (handle_info/2) goes to the
%% region as a completion of no message (number 0): the region keeps the
%% new state (it is what moves and what the store keeps) and learns of a
%% stop, so a message sent meanwhile starts a new incarnation.
own_doing(Old, New, Next, E) ->
    done(0, undefined, Old, New, Next, E).

%% Matching both arguments against one variable is `=:='.
change(State, State) -> unchanged;
change(_, New) -> {state, New}.

-spec info(term(), #entity{}) -> no_return().
info(Info, #entity{module = M, state = State} = E) ->
    case erlang:function_exported(M, handle_info, 2) of
        false ->
            loop(E);
        true ->
            case callback(fun() -> M:handle_info(Info, State) end, E) of
                {noreply, State} ->
                    loop(E);
                {noreply, New} ->
                    own_doing(State, New, continue, E),
                    loop(E#entity{state = New});
                {stop, New} ->
                    own_doing(State, New, stop, E),
                    stop(normal, E#entity{state = New});
                Other -> exit({bad_return_value, Other})
            end
    end.

-spec stop(term(), #entity{}) -> no_return().
stop(Reason, #entity{module = M, state = State}) ->
    case erlang:function_exported(M, terminate, 2) of
        true -> _ = M:terminate(Reason, State);
        false -> ok
    end,
    exit(normal).
