%% @private
%% @doc Supervisor of the node servers ({@link shardnode_node}), one per C
%% node started with {@link shardnode:start_node/1}.
%%
%% Children are `temporary': a C node that dies is reported, not restarted
%% behind the caller's back.  A test that kills a node on purpose must find
%% it gone, and a production user who wants restarts wants them under a
%% supervisor of their own, with their own intensity: {@link
%% shardnode:child_spec/1}.
-module(shardnode_sup).
-behaviour(supervisor).

-export([start_link/0, start_child/1]).
-export([init/1]).

-define(SERVER, ?MODULE).

-spec start_link() -> {ok, pid()} | {error, term()}.
start_link() ->
    supervisor:start_link({local, ?SERVER}, ?MODULE, []).

%% @doc Starts a node server for a validated command (see
%% {@link shardnode_args:command/1}).
-spec start_child(shardnode_args:command()) -> {ok, pid()} | {error, term()}.
start_child(Command) ->
    supervisor:start_child(?SERVER, [Command]).

-spec init([]) -> {ok, {supervisor:sup_flags(), [supervisor:child_spec()]}}.
init([]) ->
    SupFlags = #{strategy => simple_one_for_one, intensity => 10, period => 10},
    Child = #{id => shardnode_node,
              %% start_child/1 appends the command
              start => {shardnode_node, start_link, [shardnode_sup]},
              restart => temporary,
              %% terminate/2 gives the C node a graceful leave before SIGKILL
              shutdown => 20000,
              type => worker,
              modules => [shardnode_node]},
    {ok, {SupFlags, [Child]}}.
