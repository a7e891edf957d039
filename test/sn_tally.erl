%% A counter written against shardnode_entity, for the suites: `incr',
%% `{incr, K}' and `get' answer the value; `{set_later, V, Ms}' sets it
%% from a timer of its own (handle_info/2); `{sleep, Ms}' answers `slept'
%% after Ms, leaving the value as it was. Each process reports its start
%% and end to the process registered as sn_instances on its node, when
%% there is one, so a suite can tell whether an entity ever ran twice.
-module(sn_tally).
-behaviour(shardnode_entity).

-export([init/2, handle/2, handle_info/2, terminate/2]).

init(Id, Stored) ->
    report({init, Id, self()}),
    {ok, case Stored of undefined -> 0; N -> N end}.

handle(incr, N) -> {reply, N + 1, N + 1};
handle({incr, K}, N) -> {reply, N + K, N + K};
handle(get, N) -> {reply, N, N};
handle({sleep, Ms}, N) ->
    timer:sleep(Ms),
    {reply, slept, N};
handle({set_later, V, Ms}, N) ->
    erlang:send_after(Ms, self(), {set, V}),
    {reply, ok, N}.

handle_info({set, V}, _N) -> {noreply, V};
handle_info(_, N) -> {noreply, N}.

terminate(_Reason, _N) ->
    report({terminate, self()}).

report(E) ->
    case whereis(sn_instances) of
        undefined -> ok;
        Pid -> Pid ! {sn_tally, E}, ok
    end.
