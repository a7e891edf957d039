%% @private
%% @doc The application's root: the `pg' scope in which every node server
%% is found by name ({@link shardnode_node:servers/0}), the node servers'
%% supervisor ({@link shardnode_sup}), the clients of {@link
%% shardnode:call/5} and the host of entities written in Erlang and Elixir
%% ({@link shardnode_entity_host}), which idles until a C node says hello
%% or types are given to it.
-module(shardnode_root_sup).
-behaviour(supervisor).

-export([start_link/0]).
-export([init/1]).

-spec start_link() -> {ok, pid()} | {error, term()}.
start_link() ->
    supervisor:start_link({local, ?MODULE}, ?MODULE, []).

-spec init([]) -> {ok, {supervisor:sup_flags(), [supervisor:child_spec()]}}.
init([]) ->
    SupFlags = #{strategy => one_for_one, intensity => 10, period => 10},
    %% The scope comes first: a node server joins it as it starts. A node
    %% server under a supervisor of the user's is not part of this tree,
    %% so should the scope's process restart (it only joins and monitors,
    %% and is not expected to fail) or the application restart, such a
    %% server runs on but is no longer found by name until it restarts.
    Children = [#{id => shardnode_nodes,
                  start => {pg, start_link, [shardnode_node:scope()]},
                  type => worker,
                  shutdown => 5000,
                  modules => [pg]},
                #{id => shardnode_sup,
                  start => {shardnode_sup, start_link, []},
                  type => supervisor,
                  shutdown => infinity,
                  modules => [shardnode_sup]},
                #{id => shardnode_clients,
                  start => {shardnode_clients, start_link, []},
                  type => worker,
                  shutdown => 5000,
                  modules => [shardnode_clients]},
                #{id => shardnode_entity_host,
                  start => {shardnode_entity_host, start_link, []},
                  type => worker,
                  shutdown => 5000,
                  modules => [shardnode_entity_host]}],
    {ok, {SupFlags, Children}}.
