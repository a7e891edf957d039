%% @private
%% @doc The `shardnode' application callback: starts {@link shardnode_sup}.
-module(shardnode_app).
-behaviour(application).

-export([start/2, stop/1]).

-spec start(application:start_type(), term()) -> {ok, pid()} | {error, term()}.
start(_StartType, _StartArgs) ->
    shardnode_root_sup:start_link().

-spec stop(term()) -> ok.
stop(_State) ->
    ok.
