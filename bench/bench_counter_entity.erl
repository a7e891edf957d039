%% The counter of the Erlang-entity figures, written against
%% shardnode_entity as a user would write one: the same messages as the
%% BEAM baseline's counter (bench_entity), run as processes on a host BEAM
%% node for a C node started with --host.
-module(bench_counter_entity).
-behaviour(shardnode_entity).

-export([init/2, handle/2]).

init(_Id, undefined) -> {ok, 0};
init(_Id, Stored) -> {ok, Stored}.

handle(incr, N) -> {reply, N + 1, N + 1};
handle(decr, N) -> {reply, N - 1, N - 1};
handle({incr, K}, N) when is_integer(K) -> {reply, N + K, N + K};
handle(get, N) -> {reply, N, N}.
