%% @doc Start shardnode C nodes from Erlang or Elixir, and talk to them.
%%
%% A shardnode node is an operating-system process that speaks the Erlang
%% distribution protocol. Nothing in this module is needed to talk to one:
%% `gen_server:call({counter, Node}, {Id, incr})' works from any BEAM node
%% with the right cookie. This module makes the common things short:
%% starting a node as a supervised OS process and waiting until it answers,
%% stopping it and making sure it is gone, and sending to entities.
%%
%% == Erlang ==
%%
%% ```
%% {ok, Node} = shardnode:start_node(#{name => "c1@127.0.0.1"}),
%% 1 = shardnode:call(Node, counter, <<"user-42">>, incr),
%% ok = shardnode:tell(Node, counter, <<"user-42">>, {incr, 10}),
%% 11 = shardnode:call(Node, counter, <<"user-42">>, get),
%% {ok, [#{node := Node, status := up}]} = shardnode:members(Node),
%% ok = shardnode:stop_node(Node).
%% '''
%%
%% == Elixir ==
%%
%% ```
%% {:ok, node} = :shardnode.start_node(%{name: 'c1@127.0.0.1'})
%% 1 = :shardnode.call(node, :counter, "user-42", :incr)
%% :ok = :shardnode.tell(node, :counter, "user-42", {:incr, 10})
%% {:ok, _} = :shardnode.start_node(%{name: 'c2@127.0.0.1', join: [node],
%%                                   config: %{number_of_shards: 50}})
%% :ok = :shardnode.stop_node(node)
%% '''
%%
%% The calling node must be distributed (`erl -name ...', `iex --name ...')
%% to talk to C nodes; the C nodes get its cookie unless told otherwise.
%%
%% == Under a supervisor of your own ==
%%
%% {@link start_node/1} starts a node under this application's supervisor,
%% which never restarts it. To have a node restarted when it dies, give
%% {@link child_spec/1} to a supervisor of yours:
%%
%% ```
%% init([]) ->
%%     {ok, {#{strategy => one_for_one, intensity => 3, period => 10},
%%           [shardnode:child_spec(#{name => "c1@127.0.0.1", types => [counter]})]}}.
%% '''
%%
%% ```
%% children = [{:shardnode, %{name: ~c"c1@127.0.0.1", types: [:counter]}}]
%% Supervisor.start_link(children, strategy: :one_for_one)
%% '''
%%
%% A tell's reply, if the entity sends one, comes back to the sender as
%% `{Type, EntityId, Reply}'.
-module(shardnode).

%% Running C nodes
-export([start_node/1,
         child_spec/1,
         start_link/1,
         host_entities/1,
         stop_node/1,
         stop_node/2,
         kill_node/1,
         os_pid/1,
         output/1,
         which_nodes/0]).

%% Talking to them
-export([call/4,
         call/5,
         multi_call/3,
         multi_call/4,
         tell/4,
         members/1,
         shard_types/1,
         coordinator/2,
         shard_region_state/2,
         cluster_sharding_stats/2,
         entity_state/3,
         shard_id/2]).

-export_type([start_opts/0, entity_id/0, member/0, call_error/0, call_opts/0]).

-define(DEFAULT_STOP_GRACE, 10000).
%% how long to wait, after the OS process has exited, for the node to
%% disappear from epmd and stop answering pings
-define(GONE_TIMEOUT, 10000).
-define(CALL_TIMEOUT, 5000).

-type start_opts() ::
        #{name => node() | string() | binary(),
          sname => atom() | string() | binary(),
          cookie => atom() | string() | binary(),
          cookie_file => file:filename(),
          port => 0..65535,
          join => [node()],
          types => [atom()],
          entities => #{atom() => module()},
          proxy_only => boolean(),
          singletons => [{Name :: atom(), Type :: atom()}],
          config => #{atom() | string() => term()},
          config_file => file:filename(),
          extra_args => [string()],
          executable => file:filename(),
          ready_timeout => non_neg_integer(),
          netns => string()}.
%% Options of {@link start_node/1}, {@link child_spec/1} and {@link
%% start_link/1}. Exactly one of `name' (a long name with
%% its host, `"c1@127.0.0.1"') and `sname' (`"c1"', or `"c1@host"') is
%% required.
%% <dl>
%% <dt>`cookie'</dt><dd>default: this node's cookie (`erlang:get_cookie()');
%%   `cookie_file' instead passes `--cookie-file'.</dd>
%% <dt>`port'</dt><dd>listen port; default ephemeral.</dd>
%% <dt>`join'</dt><dd>seed nodes; without them the node starts a new
%%   cluster.</dd>
%% <dt>`types'</dt><dd>entity types hosted; default `[counter, kv, echo]';
%%   `[]': none of them (the node hosts its `entities' alone).</dd>
%% <dt>`entities'</dt><dd>types written in Erlang or Elixir, `#{Type =>
%%   Module}' ({@link shardnode_entity}): the node hosts them besides
%%   `types', and their entities run on this node as processes of
%%   `Module'.</dd>
%% <dt>`proxy_only'</dt><dd>route but host no shards.</dd>
%% <dt>`singletons'</dt><dd>cluster singletons, `[{Name, Type}]'
%% (docs/contract.md "Cluster singletons").</dd>
%% <dt>`config'</dt><dd>settings, each passed as `--set Key=Value'; strings,
%%   binaries, atoms and integers as they are, other terms in Erlang
%%   syntax. Example: `#{number_of_shards => 10, data_dir => "/tmp/sn"}';
%%   `metrics_port => 9464' serves Prometheus metrics, `plugin_dir =>
%%   "/opt/types"' loads entity types of yours (docs/contract.md).</dd>
%% <dt>`config_file'</dt><dd>passed as `--config'.</dd>
%% <dt>`extra_args'</dt><dd>appended to the command line as they are.</dd>
%% <dt>`netns'</dt><dd>a Linux network namespace to run the node in
%%   (`ip netns exec'; needs root), for tests of real partitions.</dd>
%% <dt>`executable'</dt><dd>default: `$SHARDNODE_EXECUTABLE' when set,
%%   else `priv/shardnode' of this application, else `priv/shardnode' in a
%%   directory above this module's beam file (a source checkout built with
%%   `make').</dd>
%% <dt>`ready_timeout'</dt><dd>milliseconds to wait for the node to answer;
%%   default 10000.</dd>
%% </dl>

-type entity_id() :: term().
%% Any term but a pid, port, reference or fun.

-type call_error() :: noconnection | noproc | timeout | {client_crashed, term()}.
%% Why a {@link call/5} or {@link multi_call/4} got no reply.

-type call_opts() :: #{timeout => timeout(),
                       attempt_timeout => timeout(),
                       idempotent => boolean()}.
%% Options of {@link call/5} that make it try again what was certainly
%% not handled:
%% <dl>
%% <dt>`timeout'</dt><dd>the call's whole time, all attempts and the
%%   pauses between them (default 5000 ms).</dd>
%% <dt>`attempt_timeout'</dt><dd>how long one attempt waits for its reply
%%   (default: `timeout'). An attempt that times out ends the call unless
%%   the message is `idempotent'.</dd>
%% <dt>`idempotent'</dt><dd>`true': the message may be handled twice
%%   without harm, so outcomes that may have happened (`timeout',
%%   `unconfirmed', a connection lost after sending) are tried again too
%%   (default `false').</dd>
%% </dl>

-type member() :: #{node := node(),
                    status := joining | up | leaving | exiting | unreachable | down,
                    atom() => term()}.

%%====================================================================
%% Running C nodes
%%====================================================================

%% @doc Starts a C node as an OS process supervised by this application
%% (started if needed), and returns once the node answers: `pong' to a
%% `net_adm:ping/1', and a reply from its admin (`{shardnode, Node}') to a
%% `shard_types' call.
%%
%% Errors:
%% <ul>
%% <li>`{exited, ExitStatus, LastLines}': the process exited before it
%%     answered (status 2: a bad flag or config value, named in the
%%     output);</li>
%% <li>`{not_ready, LastLines}': it did not answer within
%%     `ready_timeout' and was killed;</li>
%% <li>`{name_in_use, Node}': a node of that name is already registered in
%%     epmd (`{name_in_use, Line}': taken as it started, as the node
%%     said);</li>
%% <li>`{bad_cookie, Line}': the node refused this node's cookie, as soon
%%     as it says so (not after `ready_timeout');</li>
%% <li>`{port_in_use, Line}': its distribution port was taken;</li>
%% <li>`{host_unreachable, Line}': the BEAM node named to host its
%%     entities written in Erlang (`--host' in `extra_args', or the `host'
%%     config key) cannot be reached, as soon as the node says so; while
%%     the host is reachable but has not answered, the node is not
%%     ready;</li>
%% <li>`{unresolvable_name, Node}': the host part of its name does not
%%     resolve; nothing was started;</li>
%% <li>`{not_distributed, Why}': this VM is not a distributed node, so it
%%     could not talk to the C node; nothing was started;</li>
%% <li>`{bad_option, What}', `{unknown_option, Key}', `missing_name',
%%     `{executable_not_found, Tried}';</li>
%% <li>`node_server_died': the server owning the port died while starting
%%     (a bug; see the logs).</li>
%% </ul>
%%
%% A C node with a short name started from a node with long names (or the
%% other way round) cannot be pinged from here; it is ready, then, when its
%% name is registered in epmd.
%%
%% ```
%% {ok, 'c1@127.0.0.1'} = shardnode:start_node(#{name => "c1@127.0.0.1"}),
%% {ok, 'c2@127.0.0.1'} =
%%     shardnode:start_node(#{name => "c2@127.0.0.1",
%%                            join => ['c1@127.0.0.1'],
%%                            types => [counter],
%%                            config => #{number_of_shards => 10}}).
%% '''
-spec start_node(start_opts()) -> {ok, node()} | {error, term()}.
start_node(Opts) ->
    case start(Opts, 0, fun shardnode_sup:start_child/1) of
        {ok, _Pid, Node} -> {ok, Node};
        {error, _} = Error -> Error
    end.

%% @doc A child specification that runs a C node under a supervisor of the
%% caller's. `Opts' are those of {@link start_node/1}, validated here:
%% options {@link start_node/1} would refuse (`{unknown_option, Key}',
%% `{bad_option, What}', `missing_name', `{executable_not_found, Tried}')
%% raise the error `{bad_start_opts, Reason}'. Whether this VM is
%% distributed and the name free is found when the child starts. The
%% child is
%%
%% ```
%% #{id => {shardnode, Node},
%%   start => {shardnode, start_link, [Opts]},
%%   restart => permanent,
%%   shutdown => 20000,
%%   type => worker,
%%   modules => [shardnode_node]}
%% '''
%%
%% Starting it starts the node as {@link start_node/1} does and returns
%% once the node answers ({@link start_link/1}). The child is the server
%% that owns the node's OS process. When the OS process exits, whatever
%% the cause (a crash, a `kill -9', {@link stop_node/1}, {@link
%% kill_node/1}), the server stops with reason `normal', and the
%% supervisor starts the node again: the child is `permanent' (a
%% `transient' one would not be restarted). To stop the node for good,
%% use `supervisor:terminate_child/2' or stop the supervisor: the node
%% then gets a SIGTERM (a graceful leave) and, if it still runs 15 seconds
%% later, a SIGKILL, within the `shutdown' of 20 seconds.
%%
%% {@link which_nodes/0}, {@link stop_node/1}, {@link kill_node/1}, {@link
%% os_pid/1} and {@link output/1} find the node as they find one started by
%% {@link start_node/1}.
%%
%% ```
%% -module(my_sup).
%% -behaviour(supervisor).
%% -export([start_link/0, init/1]).
%%
%% start_link() ->
%%     supervisor:start_link({local, ?MODULE}, ?MODULE, []).
%%
%% init([]) ->
%%     Node = shardnode:child_spec(#{name => "c1@127.0.0.1", types => [counter],
%%                                   config => #{number_of_shards => 10}}),
%%     {ok, {#{strategy => one_for_one, intensity => 3, period => 10}, [Node]}}.
%% '''
%%
%% In Elixir, `{:shardnode, Opts}' in a list of children calls this
%% function:
%%
%% ```
%% children = [
%%   {:shardnode, %{name: ~c"c1@127.0.0.1", types: [:counter]}}
%% ]
%% Supervisor.start_link(children, strategy: :one_for_one)
%% '''
-spec child_spec(start_opts()) -> supervisor:child_spec().
child_spec(Opts) ->
    case shardnode_args:command(Opts) of
        {ok, #{node := Node}} ->
            #{id => {shardnode, Node},
              start => {?MODULE, start_link, [Opts]},
              restart => permanent,
              %% the server's terminate gives the node 15 s to leave
              %% before its SIGKILL
              shutdown => 20000,
              type => worker,
              modules => [shardnode_node]};
        {error, Reason} ->
            %% not the options themselves: they may hold the cookie
            error({bad_start_opts, Reason})
    end.

%% @doc Starts a C node as {@link start_node/1} does, but with the server
%% that owns its OS process linked to the caller (a supervisor of the
%% caller's, given {@link child_spec/1}) instead of under this
%% application's supervisor, and returns `{ok, Pid}', the server's pid,
%% once the node answers. Starts this application if it is not running:
%% it keeps the registry in which the functions of this module find the
%% node, and hosts the `entities'.
%%
%% Errors are those of {@link start_node/1}, but a name still registered
%% in epmd is waited for up to ten seconds before `{name_in_use, Node}':
%% a node of that name that has just died (the one a supervisor's restart
%% replaces) leaves epmd a moment after its OS process has exited. On an
%% error the server has stopped, and the caller gets no exit signal nor
%% `EXIT' message from it.
-spec start_link(start_opts()) -> {ok, pid()} | {error, term()}.
start_link(Opts) ->
    StartServer = fun(Command) -> shardnode_node:start_link(user, Command) end,
    case start(Opts, ?GONE_TIMEOUT, StartServer) of
        {ok, Pid, _Node} -> {ok, Pid};
        {error, _} = Error -> Error
    end.

%% Starts the node of Opts with StartServer (a server linked to the
%% caller, or one under shardnode_sup) and waits until it answers.
%% NameWaitMs: how long a name registered in epmd is given to go before it
%% is taken to be in use (0: it is looked up once).
start(_Opts, _NameWaitMs, _StartServer) when node() =:= nonode@nohost ->
    {error, {not_distributed, "this VM must be distributed to talk to a C node: "
             "start it with -name or -sname (elixir --name, iex --sname), or call net_kernel:start/2"}};
start(Opts, NameWaitMs, StartServer) ->
    case shardnode_args:command(Opts) of
        {ok, #{node := Node} = Command} ->
            Free = fun() -> not shardnode_node:registered(Node) end,
            case resolvable(Node) andalso shardnode_poll:until(Free, NameWaitMs) of
                false -> {error, {unresolvable_name, Node}};
                ok -> start_command(Command, StartServer);
                timeout -> {error, {name_in_use, Node}}
            end;
        {error, _} = Error ->
            Error
    end.

%% Whether the host part of a node name resolves: one that does not would
%% start a node nobody can reach (this node's ping never answered).
resolvable(Node) ->
    [_, Host] = string:split(atom_to_list(Node), "@"),
    lists:any(fun(Family) -> element(1, inet:getaddr(Host, Family)) =:= ok end, [inet, inet6]).

%% Starts the application (the registry, the entity host), hosts the
%% command's entity types, starts the server, and waits for the node.
start_command(#{entities := Entities} = Command, StartServer) ->
    case application:ensure_all_started(shardnode) of
        {ok, _} ->
            case start_hosting(Entities, Command, StartServer) of
                {ok, Pid} -> await_ready(Pid);
                {error, _} = Error -> Error
            end;
        {error, _} = Error ->
            Error
    end.

%% The types the node's entities written in Erlang run as are hosted here
%% before it starts, so its first hello is answered with them.
start_hosting(Entities, Command, StartServer) when map_size(Entities) =:= 0 ->
    StartServer(Command);
start_hosting(Entities, Command, StartServer) ->
    case shardnode_entity_host:add_types(Entities) of
        ok -> StartServer(Command);
        {error, _} = Error -> Error
    end.

%% {ok, Pid, Node} once the server's node answers; the server's error (or
%% node_server_died when the server itself died) once it has stopped.
await_ready(Pid) ->
    case shardnode_node:await_ready(Pid) of
        {ok, Node} ->
            {ok, Pid, Node};
        {error, Reason} ->
            %% The server replies with an error only as it stops. A caller
            %% linked to it (start_link/1's) learns of that from the error
            %% alone: the link goes, and an 'EXIT' it already sent with it.
            unlink(Pid),
            receive {'EXIT', Pid, _} -> ok after 0 -> ok end,
            case Reason of
                not_found -> {error, node_server_died};
                _ -> {error, Reason}
            end
    end.

%% @doc Hosts entity types written in Erlang or Elixir on this node: a C
%% node started by hand with `--host' naming this node runs these types'
%% entities here, as processes of the given modules ({@link
%% shardnode_entity}). Starts this application if needed. Types given
%% before keep running; a type given again takes its new module for the
%% entities that start from now on.
%%
%% ```
%% ok = shardnode:host_entities(#{cart => cart}).
%% '''
-spec host_entities(#{atom() => module()}) ->
          ok | {error, {not_an_entity_module, term()} | {bad_type, term()} | term()}.
host_entities(Entities) when is_map(Entities) ->
    case application:ensure_all_started(shardnode) of
        {ok, _} -> shardnode_entity_host:add_types(Entities);
        {error, _} = Error -> Error
    end.

%% @equiv stop_node(Node, 10000)
-spec stop_node(node()) -> ok | {error, term()}.
stop_node(Node) ->
    stop_node(Node, ?DEFAULT_STOP_GRACE).

%% @doc Stops a node started by {@link start_node/1} and returns `ok' once it
%% is gone: its OS process has exited with status 0 after a SIGTERM (a
%% graceful leave), its name is no longer registered in epmd, and a ping
%% gets `pang'.
%%
%% A node under a supervisor ({@link child_spec/1}) is stopped the same
%% way, and the supervisor starts it again: `ok' comes once the OS process
%% has exited with status 0, without waiting for the name to leave epmd
%% (the node started again takes it).
%%
%% A node still running `GraceMs' milliseconds after the SIGTERM is killed
%% with SIGKILL. Errors:
%% <ul>
%% <li>`not_found': no node of that name was started here (or it has
%%     already exited);</li>
%% <li>`{sigterm_timeout, GraceMs}': the node had to be killed;</li>
%% <li>`{exit_status, Status}': it exited, but not with status 0;</li>
%% <li>`{still_registered, Node}', `{still_answering, Node}': the OS
%%     process has exited, yet ten seconds later the name is still in epmd
%%     or still answers pings (another process of the same name?).</li>
%% </ul>
%% After every error but `not_found' and the last two, the node is gone.
-spec stop_node(node(), non_neg_integer()) -> ok | {error, term()}.
stop_node(Node, GraceMs) ->
    with_server(Node, fun(Pid, Info) ->
                              Result = shardnode_node:stop(Pid, GraceMs),
                              gone(Info, Result, GraceMs)
                      end).

%% @doc Kills a node with SIGKILL, as a crash would, and returns `ok' once it
%% is gone (exited, not in epmd, not answering pings). For failure tests. A
%% node under a supervisor ({@link child_spec/1}), which starts it again:
%% `ok' once its OS process has exited.
-spec kill_node(node()) -> ok | {error, term()}.
kill_node(Node) ->
    with_server(Node, fun(Pid, Info) ->
                              case shardnode_node:kill(Pid) of
                                  {ok, _Status, _} -> wait_gone(Info);
                                  {error, _} = Error -> Error
                              end
                      end).

%% @doc The operating-system pid of a node started by {@link start_node/1}
%% or under a supervisor ({@link child_spec/1}).
-spec os_pid(node()) -> {ok, non_neg_integer()} | {error, not_found}.
os_pid(Node) ->
    case server(Node) of
        {ok, _Pid, #{os_pid := OsPid}} -> {ok, OsPid};
        error -> {error, not_found}
    end.

%% @doc The last 200 lines a node started by {@link start_node/1} or under a
%% supervisor ({@link child_spec/1}) wrote (its log goes to stderr, one
%% line per event), oldest first.
-spec output(node()) -> {ok, [binary()]} | {error, not_found}.
output(Node) ->
    with_server(Node, fun(Pid, _Info) -> {ok, shardnode_node:output(Pid)} end).

%% @doc The nodes started by {@link start_node/1} or under supervisors
%% ({@link child_spec/1}) whose OS processes are running, ready or not,
%% in the order they started.
-spec which_nodes() -> [node()].
which_nodes() ->
    [Node || {_Pid, #{node := Node}} <- servers()].

%%====================================================================
%% Talking to nodes (any shardnode node, however it was started)
%%====================================================================

%% @equiv call(Node, Type, EntityId, Msg, 5000)
-spec call(node(), atom(), entity_id(), term()) -> term() | {error, call_error()}.
call(Node, Type, EntityId, Msg) ->
    call(Node, Type, EntityId, Msg, ?CALL_TIMEOUT).

%% @doc Asks an entity and returns its reply. The message reaches the
%% entity wherever its shard lives in the cluster, as
%% `gen_server:call({Type, Node}, {EntityId, Msg}, Timeout)' would, for a
%% fraction of the calling node's work: one distribution message out and
%% one back, shared with the other calls this node makes to `Node' at the
%% same time (docs/contract.md "The Erlang client"). Errors are returned,
%% not raised:
%% <ul>
%% <li>`{error, noconnection}' as soon as this node loses its connection to
%%     `Node' (or cannot make one);</li>
%% <li>`{error, noproc}' at once when `Node' hosts no region of `Type';</li>
%% <li>`{error, timeout}' after `Timeout' milliseconds; a reply that comes
%%     later never reaches the caller's mailbox.</li>
%% </ul>
%% An entity's own `{error, _}' replies come back as they are.
%%
%% ```
%% 1 = shardnode:call(Node, counter, <<"a">>, incr, 1000),
%% ok = shardnode:call(Node, kv, "cart-7", {put, apples, 3}, 1000).
%% '''
%%
%% With options ({@link call_opts()}) instead of a timeout, the call is
%% tried again, until its `timeout', whenever its outcome says the message
%% was certainly not handled: the request never left this node (no
%% connection to the member), or the member answered `{error,
%% shutting_down}', `{error, store_unavailable}' or `{error, overloaded}'.
%% `Node' may then be a list of members: a call through one that is gone
%% (or hosts no region of `Type') goes on at once through the next. An
%% outcome that may have happened — `{error, timeout}', `{error,
%% unconfirmed}', a connection lost after the request was sent — ends the
%% call, unless the message is marked `idempotent'. When the time is up,
%% the last outcome is returned.
%%
%% ```
%% %% Through any of three members; a member killed a moment ago costs
%% %% nothing but the next one's round trip.
%% ok = shardnode:call([A, B, C], order, <<"o-1">>, {pay, 30},
%%                     #{timeout => 10000, attempt_timeout => 2000}).
%% '''
-spec call(node() | [node(), ...], atom(), entity_id(), term(), timeout() | call_opts()) ->
          term() | {error, call_error()}.
call(Node, Type, EntityId, Msg, Timeout) when is_atom(Node), not is_map(Timeout) ->
    shardnode_client:call(shardnode_clients:client(Node), Type, EntityId, Msg, Timeout);
call(Node, Type, EntityId, Msg, Opts) when is_atom(Node), is_map(Opts) ->
    shardnode_retry:call([Node], Type, EntityId, Msg, Opts);
call([_ | _] = Nodes, Type, EntityId, Msg, Opts) when is_map(Opts) ->
    shardnode_retry:call(Nodes, Type, EntityId, Msg, Opts);
call([_ | _] = Nodes, Type, EntityId, Msg, Timeout) ->
    shardnode_retry:call(Nodes, Type, EntityId, Msg, #{timeout => Timeout}).

%% @equiv multi_call(Node, Type, Requests, 5000)
-spec multi_call(node(), atom(), [{entity_id(), term()}]) -> [term()] | {error, call_error()}.
multi_call(Node, Type, Requests) ->
    multi_call(Node, Type, Requests, ?CALL_TIMEOUT).

%% @doc Asks many entities of one type in one message, and returns their
%% replies in the order of `Requests'. Each request is handled as a
%% {@link call/5} of its own (entities on other members are asked there,
%% all at once); the result comes when the last reply has. Errors are
%% those of {@link call/5}, for the whole list: `{error, timeout}' if any
%% reply is missing at the timeout.
%%
%% ```
%% [1, 1, 2] = shardnode:multi_call(Node, counter, [{a, incr}, {b, incr}, {a, incr}]).
%% '''
-spec multi_call(node(), atom(), [{entity_id(), term()}], timeout()) -> [term()] | {error, call_error()}.
multi_call(Node, Type, Requests, Timeout) when is_list(Requests) ->
    shardnode_client:multi_call(shardnode_clients:client(Node), Type, Requests, Timeout).

%% @doc Tells an entity: `{Type, Node} ! {EntityId, Msg}'. If the entity
%% replies, the reply arrives at the caller as `{Type, EntityId, Reply}'.
%% Delivery is at most once.
-spec tell(node(), atom(), entity_id(), term()) -> ok.
tell(Node, Type, EntityId, Msg) ->
    {Type, Node} ! {EntityId, Msg},
    ok.

%% @doc The cluster's members as `Node' sees them, oldest first.
-spec members(node()) -> {ok, [member()]} | {error, term()}.
members(Node) ->
    admin(Node, members).

%% @doc The entity types hosted by `Node'.
-spec shard_types(node()) -> {ok, [atom()]} | {error, term()}.
shard_types(Node) ->
    admin(Node, shard_types).

%% @doc The node where the coordinator of `Type' runs, as `Node' sees it.
-spec coordinator(node(), atom()) -> {ok, node()} | {error, no_coordinator | term()}.
coordinator(Node, Type) ->
    admin(Node, {coordinator, Type}).

%% @doc The shards the `Type' region on `Node' hosts, each with its live
%% entities.
-spec shard_region_state(node(), atom()) ->
          {ok, #{non_neg_integer() => [entity_id()]}} | {error, term()}.
shard_region_state(Node, Type) ->
    gen_server:call({Type, Node}, get_shard_region_state, ?CALL_TIMEOUT).

%% @doc For every region of `Type' in the cluster, its shards and the
%% number of entities in each.
-spec cluster_sharding_stats(node(), atom()) ->
          {ok, #{node() => #{non_neg_integer() => non_neg_integer()}}} | {error, term()}.
cluster_sharding_stats(Node, Type) ->
    gen_server:call({Type, Node}, get_cluster_sharding_stats, ?CALL_TIMEOUT).

%% @doc The state an entity last completed, looked at without sending it
%% a message of its own: it is not started (`{error, not_running}' when
%% it is not live), its idle time is not reset, nothing is written. The
%% look is routed as a call is (`{Type, Node}' ! `{EntityId,
%% '$shardnode_state'}'), so it sees the state after the calls to the
%% entity answered before it. Any entity type, C or Erlang; `{error,
%% no_state}' for a type that keeps none (`echo').
%%
%% ```
%% 3 = shardnode:call(Node, counter, <<"a">>, incr),
%% {ok, 3} = shardnode:entity_state(Node, counter, <<"a">>).
%% '''
-spec entity_state(node(), atom(), entity_id()) ->
          {ok, term()} | {error, not_running | no_state | call_error()}.
entity_state(Node, Type, EntityId) ->
    call(Node, Type, EntityId, '$shardnode_state', ?CALL_TIMEOUT).

%% @doc The shard an entity belongs to: `erlang:phash2(EntityId,
%% NumberOfShards)', exactly what the C node computes.
-spec shard_id(entity_id(), pos_integer()) -> non_neg_integer().
shard_id(EntityId, NumberOfShards) ->
    erlang:phash2(EntityId, NumberOfShards).

%%====================================================================
%% Internal functions
%%====================================================================

admin(Node, Request) ->
    gen_server:call({shardnode, Node}, Request, ?CALL_TIMEOUT).

%% In the order they started: stopping them last first (shardnode_ct)
%% leaves the oldest, which may coordinate the others, until the end.
servers() ->
    Infos = [{Pid, Info} || Pid <- shardnode_node:servers(),
                            {ok, Info} <- [shardnode_node:info(Pid)]],
    lists:sort(fun({_, #{started := A}}, {_, #{started := B}}) -> A =< B end, Infos).

server(Node) ->
    case [{Pid, Info} || {Pid, #{node := N} = Info} <- servers(), N =:= Node] of
        [{Pid, Info} | _] -> {ok, Pid, Info};
        [] -> error
    end.

with_server(Node, Fun) ->
    case server(Node) of
        {ok, Pid, Info} -> Fun(Pid, Info);
        error -> {error, not_found}
    end.

gone(_Info, {error, not_found} = Error, _GraceMs) ->
    Error;
gone(Info, {ok, Status, SigKilled}, GraceMs) ->
    case wait_gone(Info) of
        ok when SigKilled -> {error, {sigterm_timeout, GraceMs}};
        ok when Status =/= 0 -> {error, {exit_status, Status}};
        Result -> Result
    end.

%% The OS process has exited. Its epmd registration ends when epmd sees the
%% registering socket close, and this node's connection to it when the
%% distribution socket closes: both happen soon, neither at once. A node
%% under a supervisor of the user's is being started again meanwhile, and
%% its name would soon be registered and answer again.
wait_gone(#{supervisor := user}) ->
    ok;
wait_gone(#{node := Node, pingable := Pingable}) ->
    Unregistered = fun() -> not shardnode_node:registered(Node) end,
    case shardnode_poll:until(Unregistered, ?GONE_TIMEOUT) of
        ok ->
            Silent = fun() -> not (Pingable andalso net_adm:ping(Node) =:= pong) end,
            case shardnode_poll:until(Silent, ?GONE_TIMEOUT) of
                ok -> ok;
                timeout -> {error, {still_answering, Node}}
            end;
        timeout ->
            {error, {still_registered, Node}}
    end.
