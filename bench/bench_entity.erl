%% One entity of the BEAM baseline: a gen_server holding its state.
%% `counter' answers incr, decr, {incr, N} and get; `echo' answers any
%% message with itself, as the C node's built-in types do.
%%
%% The region starts entities without waiting for them: gen_server:start_link/3
%% would block the region on each new entity's init acknowledgement, a
%% selective receive that scans the region's whole mailbox, which under load
%% holds thousands of messages. proc_lib:spawn_link/1 and
%% gen_server:enter_loop/3 give the same gen_server without that wait.
-module(bench_entity).
-behaviour(gen_server).

-export([start_link/2]).
-export([init/1, handle_call/3, handle_cast/2]).

-spec start_link(atom(), term()) -> pid().
start_link(Type, Id) ->
    proc_lib:spawn_link(fun() ->
                                gen_server:enter_loop(?MODULE, [], {Type, Id, initial(Type)})
                        end).

init({Type, Id}) ->
    {ok, {Type, Id, initial(Type)}}.

handle_call(_Req, _From, S) ->
    {reply, {error, not_supported}, S}.

handle_cast({call, From, Msg}, {Type, Id, State0}) ->
    {Reply, State} = handle(Type, Msg, State0),
    gen:reply(From, Reply),
    {noreply, {Type, Id, State}};
handle_cast({tell, ReplyTo, Msg}, {Type, Id, State0}) ->
    {Reply, State} = handle(Type, Msg, State0),
    ReplyTo ! {Type, Id, Reply},
    {noreply, {Type, Id, State}}.

initial(counter) -> 0;
initial(echo) -> undefined.

handle(counter, incr, N) -> {N + 1, N + 1};
handle(counter, decr, N) -> {N - 1, N - 1};
handle(counter, {incr, K}, N) when is_integer(K) -> {N + K, N + K};
handle(counter, get, N) -> {N, N};
handle(echo, Msg, S) -> {Msg, S};
handle(_Type, Msg, S) -> {{error, {unknown_message, Msg}}, S}.
