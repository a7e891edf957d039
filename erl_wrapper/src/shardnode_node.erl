%% @doc The server that owns one C node: an Erlang port running
%% `priv/shardnode'.
%%
%% Use {@link shardnode} rather than this module: `shardnode:start_node/1'
%% validates the options and builds the command line
%% ({@link shardnode_args:command/1}), starts one of these servers
%% under {@link shardnode_sup} and waits for the node to answer;
%% `shardnode:start_link/1', which a supervisor of the user's calls
%% through `shardnode:child_spec/1', does the same with the server linked
%% to that supervisor instead.
%%
%% What the server does:
%% <ul>
%% <li>runs the executable with `{spawn_executable, Path}', stderr merged
%%     into stdout, and reads its output line by line; every line goes to
%%     logger as `Node: Msg', without the node's own timestamp (logger adds
%%     its own): a record (a logfmt line, docs/contract.md "Logs") at
%%     `warning' or `error' when the node gave it that level, at `debug'
%%     otherwise (`debug' and `info' records, and a line that is no
%%     record), so a node's routine chatter stays out of a log at the usual
%%     levels while its warnings and errors show. Each event is in the
%%     logger domain `[shardnode, node]', with the metadata
%%     `shardnode => Node', `mfa' (this module's, so that
%%     `logger:set_module_level(shardnode_node, debug)' shows the debug
%%     events without lowering the primary level) and, where the record
%%     has them, `shardnode_type => Type' and `shard => Shard'. The last 200
%%     lines are kept as they came for diagnostics ({@link output/1});</li>
%% <li>while starting, polls the node every 50 ms until it answers (a
%%     `net_adm:ping/1' that returns `pong', then a `shard_types' call to
%%     its admin, so that a ready node has its names registered; or, when
%%     this node cannot talk
%%     to the C node because one uses long names and the other short names,
%%     until the name is registered in epmd) and gives up at the deadline,
%%     killing the OS process;</li>
%% <li>stops the node with SIGTERM (a graceful leave, exit status 0), and
%%     with SIGKILL when the grace period runs out;</li>
%% <li>stops, with reason `normal', when the OS process exits, whatever
%%     the cause. Under {@link shardnode_sup} it is a `temporary' child: a
%%     C node that dies is reported, never restarted behind its user's
%%     back. Under a supervisor of the user's it is what the child
%%     specification says ({@link shardnode:child_spec/1}: `permanent'),
%%     and that supervisor starts it again;</li>
%% <li>joins the process group of the running node servers (a `pg' scope
%%     the application starts, {@link servers/0}) while it lives, wherever
%%     it is supervised, so that {@link shardnode:which_nodes/0} and the
%%     functions that look a node up by name find it.</li>
%% </ul>
%%
%% When the server itself is stopped (the application stops, the supervisor
%% shuts down), the C node gets a SIGTERM and, if it lingers, a SIGKILL: no
%% OS process outlives its server.
%%
%% It is a `gen_statem' whose states are the node's life:
%% <pre>
%% starting --answers--> ready --stop/2--> stopping --grace over--> killing
%%    |                    \________________kill/1________________/
%%    +--ready timeout--> failing (SIGKILLed)
%% any --the OS process exits--> {exited, Status, Phase}: the port drains
%%                               its last output, then the server stops
%% </pre>
%% Each state's timer (the ready deadline, the stop grace, the drain) is a
%% state timeout: leaving the state cancels it.
-module(shardnode_node).
-behaviour(gen_statem).

%% API
-export([command/1,
         start_link/2,
         scope/0,
         servers/0,
         await_ready/1,
         stop/2,
         kill/1,
         info/1,
         output/1,
         registered/1]).

%% gen_statem callbacks
-export([init/1, callback_mode/0, handle_event/4, terminate/3]).
%% the parser of the node's log records, for the suites
-export([parse_record/1]).

-export_type([command/0, supervisor/0, info/0, stop_result/0]).

%% The pg scope (a registered process started by shardnode_root_sup) and
%% its one group, which every node server joins.
-define(SCOPE, shardnode_nodes).
-define(GROUP, servers).
-define(MAX_LINES, 200).
-define(LINE_LENGTH, 4096).
-define(POLL_INTERVAL, 50).
%% How long terminate/2 waits for a graceful exit before SIGKILL; the
%% supervisor's shutdown time (shardnode_sup) is longer than this.
-define(TERMINATE_GRACE, 15000).
%% The port delivers output still in the pipe after exit_status, then
%% closes; how long to wait for that close.
-define(DRAIN_TIMEOUT, 1000).

-type command() :: shardnode_args:command().
%% The same as {@link shardnode_args:command()}.

-type supervisor() :: shardnode_sup | user.
%% Who supervises a server: {@link shardnode_sup}, which never restarts
%% it ({@link shardnode:start_node/1}), or the process that started it,
%% linked to it: a supervisor of the user's ({@link
%% shardnode:child_spec/1}), which may start the node again as soon as
%% the server stops.

-type info() :: #{node := node(),
                  os_pid := non_neg_integer(),
                  phase := phase(),
                  supervisor := supervisor(),
                  %% false when this node cannot ping the C node (long
                  %% names here, short names there, or the other way round)
                  pingable := boolean()}.

-type stop_result() :: {ok, ExitStatus :: non_neg_integer(), SigKilled :: boolean()}.

-type phase() :: starting | ready | stopping | killing | failing.

%% The state: a phase, or the OS process gone with its status and the
%% phase it was in, while the port drains what it wrote last.
-type state() :: phase() | {exited, non_neg_integer(), phase()}.

-record(data,
        {node :: node(),
         command :: command(),
         supervisor :: supervisor(),
         port :: port() | undefined,
         os_pid :: non_neg_integer(),
         %% orders the servers by their start (servers/0)
         started = erlang:unique_integer([monotonic]) :: integer(),
         %% callers of await_ready/1 while starting
         waiters = [] :: [gen_statem:from()],
         %% callers of stop/2 and kill/1
         stoppers = [] :: [gen_statem:from()],
         poller :: {pid(), reference()} | undefined,
         sigkilled = false :: boolean(),
         %% why the start failed, as the node said it (start_error/1)
         start_error :: undefined | {atom(), binary()},
         lines = queue:new() :: queue:queue(binary()),
         nlines = 0 :: non_neg_integer(),
         partial = [] :: iodata()}).

%%====================================================================
%% API
%%====================================================================

%% @doc Validates start options and turns them into the command line of the
%% C node: the same as {@link shardnode_args:command/1}, where it is built
%% and documented. Kept here for callers of this module.
-spec command(shardnode:start_opts()) -> {ok, command()} | {error, term()}.
command(Opts) ->
    shardnode_args:command(Opts).

%% @doc Starts a server for a validated command, linked to the caller,
%% and returns at once, while the node starts: {@link await_ready/1} waits
%% for it. `Supervisor' says who the caller is, for {@link info/1}. Use
%% {@link shardnode:start_node/1} or {@link shardnode:start_link/1} rather
%% than this.
-spec start_link(supervisor(), command()) -> {ok, pid()} | {error, term()}.
start_link(Supervisor, Command) when Supervisor =:= shardnode_sup; Supervisor =:= user ->
    gen_statem:start_link(?MODULE, {Supervisor, Command}, []).

%% @doc The name of the `pg' scope the node servers join. The application
%% starts it ({@link shardnode_root_sup}); a server started while it is not
%% running joins nothing, and is then not found by name.
-spec scope() -> atom().
scope() -> ?SCOPE.

%% @doc The running node servers on this node, whoever supervises them:
%% those under {@link shardnode_sup} and those under supervisors of the
%% user's. `[]' when the application is not running.
-spec servers() -> [pid()].
servers() ->
    %% reads the scope's table: [] also when there is no scope
    pg:get_local_members(?SCOPE, ?GROUP).

%% @doc Waits until the node answers: `{ok, Node}'. When the OS process exits
%% first: `{error, {exited, ExitStatus, LastLines}}'; when the ready timeout
%% passes first (the process is then killed): `{error, {not_ready,
%% LastLines}}'. The server enforces the deadline, so this call never hangs.
-spec await_ready(pid()) ->
          {ok, node()}
              | {error, {exited, non_neg_integer(), [binary()]}
                 | {not_ready, [binary()]}
                 | not_found}.
await_ready(Pid) ->
    safe_call(Pid, await_ready).

%% @doc Sends SIGTERM, waits up to `GraceMs' for the process to exit, then
%% sends SIGKILL. Returns once the OS process has exited, with its exit
%% status (128 + signal number when a signal killed it) and whether the
%% SIGKILL was needed.
-spec stop(pid(), non_neg_integer()) -> stop_result() | {error, not_found}.
stop(Pid, GraceMs) when is_integer(GraceMs), GraceMs >= 0 ->
    safe_call(Pid, {stop, GraceMs}).

%% @doc Sends SIGKILL and returns once the OS process has exited.
-spec kill(pid()) -> stop_result() | {error, not_found}.
kill(Pid) ->
    safe_call(Pid, kill).

%% @doc The node's name, OS pid, phase, who supervises the server, and
%% whether this node can ping the node.
-spec info(pid()) -> {ok, info()} | {error, not_found}.
info(Pid) ->
    case safe_call(Pid, info) of
        {error, not_found} = Error -> Error;
        Info -> {ok, Info}
    end.

%% @doc Whether a node name (the part before the `@', or the whole node
%% name) is registered in the epmd of this host.
-spec registered(node() | string()) -> boolean().
registered(Node) when is_atom(Node) ->
    registered(alive(Node));
registered(Alive) when is_list(Alive) ->
    case erl_epmd:names({127, 0, 0, 1}) of
        {ok, Names} -> lists:keymember(Alive, 1, Names);
        {error, _} -> false
    end.

%% @doc The last 200 lines the node wrote to stdout or stderr, oldest first,
%% without their line ends. A line longer than 4096 bytes is kept whole.
-spec output(pid()) -> [binary()].
output(Pid) ->
    case safe_call(Pid, output) of
        {error, not_found} -> [];
        Lines -> Lines
    end.

%%====================================================================
%% gen_statem callbacks
%%====================================================================

%% @private
-spec callback_mode() -> gen_statem:callback_mode_result().
callback_mode() -> handle_event_function.

%% @private
-spec init({supervisor(), command()}) -> gen_statem:init_result(state()).
init({Supervisor, #{node := Node, executable := Exe, args := Args,
                    ready_timeout := ReadyTimeout} = Command}) ->
    process_flag(trap_exit, true),
    %% the scope removes a member that exits, however it exits
    case whereis(?SCOPE) of
        undefined -> ok;
        _ -> ok = pg:join(?SCOPE, ?GROUP, self())
    end,
    logger:update_process_metadata(#{domain => [shardnode, node], shardnode => Node}),
    PortOpts = [{args, Args}, exit_status, stderr_to_stdout, use_stdio, binary,
                {line, ?LINE_LENGTH}],
    try open_port({spawn_executable, Exe}, PortOpts) of
        Port ->
            {os_pid, OsPid} = erlang:port_info(Port, os_pid),
            logger:info("shardnode ~ts: started as OS process ~b: ~ts ~ts",
                        [Node, OsPid, Exe, lists:join(" ", shardnode_args:redact(Args))]),
            D = #data{node = Node, command = Command, supervisor = Supervisor,
                      port = Port, os_pid = OsPid},
            {ok, starting, start_poller(D), [{state_timeout, ReadyTimeout, ready_timeout}]}
    catch
        error:Reason ->
            {stop, {open_port, Exe, Reason}}
    end.

%% @private
-spec handle_event(gen_statem:event_type(), term(), state(), #data{}) ->
          gen_statem:event_handler_result(state()).
%% The port, in any state: its output, the process's exit, the drain.
handle_event(info, {Port, {data, {eol, Part}}}, State, #data{port = Port, partial = Partial} = D0) ->
    Line = iolist_to_binary([Partial, Part]),
    D = add_line(Line, D0#data{partial = []}),
    case State =:= starting andalso start_error(Line, host(D#data.command)) of
        {Reason, _} = Why when Reason =:= bad_cookie; Reason =:= host_unreachable ->
            %% It would never answer this node, or never serve its host's
            %% types: no need to wait the ready timeout out.
            logger:warning("shardnode ~ts: ~ts; killing it", [D#data.node, element(2, Why)]),
            signal(D, "KILL"),
            {next_state, failing, stop_poller(D#data{sigkilled = true, start_error = Why})};
        _ ->
            {keep_state, D}
    end;
handle_event(info, {Port, {data, {noeol, Part}}}, _, #data{port = Port, partial = Partial} = D) ->
    {keep_state, D#data{partial = [Partial, Part]}};
handle_event(info, {Port, {exit_status, Status}}, Phase, #data{port = Port} = D) when is_atom(Phase) ->
    %% Output written just before the exit may still be on its way, after
    %% this message: wait for the port to close.
    {next_state, {exited, Status, Phase}, stop_poller(D), [{state_timeout, ?DRAIN_TIMEOUT, drained}]};
handle_event(info, {'EXIT', Port, _Reason}, {exited, Status, Phase}, #data{port = Port} = D) ->
    exited(Status, Phase, flush_partial(D#data{port = undefined}));
handle_event(state_timeout, drained, {exited, Status, Phase}, #data{port = Port} = D) ->
    catch port_close(Port),
    exited(Status, Phase, flush_partial(D#data{port = undefined}));
%% Starting: ready, or not by the deadline.
handle_event(info, {ready, Pid}, starting, #data{poller = {Pid, _}} = D0) ->
    D = stop_poller(D0),
    logger:info("shardnode ~ts: ready", [D#data.node]),
    {next_state, ready, D#data{waiters = []},
     [{reply, From, {ok, D#data.node}} || From <- D#data.waiters]};
handle_event(state_timeout, ready_timeout, starting, D) ->
    logger:warning("shardnode ~ts: not answering after ~b ms; killing it",
                   [D#data.node, maps:get(ready_timeout, D#data.command)]),
    signal(D, "KILL"),
    {next_state, failing, stop_poller(D#data{sigkilled = true})};
handle_event(info, {'DOWN', Ref, process, Pid, Reason}, _, #data{poller = {Pid, Ref}} = D) ->
    %% The poller only ever ends by sending `ready' or being killed by us.
    logger:warning("shardnode ~ts: readiness poller died: ~0tp; restarting it",
                   [D#data.node, Reason]),
    {keep_state, start_poller(D#data{poller = undefined})};
%% Stopping: the grace after SIGTERM runs out.
handle_event(state_timeout, stop_timeout, stopping, D) ->
    logger:warning("shardnode ~ts: still running after SIGTERM; sending SIGKILL; "
                   "last output:~n~ts",
                   [D#data.node, [[L, $\n] || L <- last(10, lines(D))]]),
    signal(D, "KILL"),
    {next_state, killing, D#data{sigkilled = true}};
%% Calls.
handle_event({call, From}, await_ready, ready, D) ->
    {keep_state, D, [{reply, From, {ok, D#data.node}}]};
handle_event({call, From}, await_ready, _, D) ->
    %% answered when it is ready, or when it has exited
    {keep_state, D#data{waiters = [From | D#data.waiters]}};
handle_event({call, From}, {stop, GraceMs}, Phase, D) when Phase =:= starting; Phase =:= ready ->
    logger:info("shardnode ~ts: stopping (SIGTERM)", [D#data.node]),
    signal(D, "TERM"),
    {next_state, stopping, stop_poller(D#data{stoppers = [From | D#data.stoppers]}),
     [{state_timeout, GraceMs, stop_timeout}]};
handle_event({call, From}, kill, Phase, D) when is_atom(Phase), Phase =/= killing ->
    logger:info("shardnode ~ts: killing (SIGKILL)", [D#data.node]),
    signal(D, "KILL"),
    {next_state, killing, stop_poller(D#data{sigkilled = true, stoppers = [From | D#data.stoppers]})};
handle_event({call, From}, Req, _, D) when Req =:= kill; element(1, Req) =:= stop ->
    %% already on its way out: answered when the process has exited
    {keep_state, D#data{stoppers = [From | D#data.stoppers]}};
handle_event({call, From}, info, State, #data{node = Node, os_pid = OsPid, supervisor = Sup, started = Started,
                                              command = #{check := Check}}) ->
    {keep_state_and_data, [{reply, From, #{node => Node, os_pid => OsPid, phase => phase(State),
                                           supervisor => Sup, pingable => Check =:= ping,
                                           started => Started}}]};
handle_event({call, From}, output, _, D) ->
    {keep_state_and_data, [{reply, From, lines(D)}]};
handle_event({call, From}, Req, _, _) ->
    {keep_state_and_data, [{reply, From, {error, {bad_request, Req}}}]};
handle_event(_, _, _, _) ->
    keep_state_and_data.

%% @private
-spec terminate(term(), state(), #data{}) -> ok.
terminate(_Reason, _, #data{port = undefined}) ->
    ok;
terminate(_Reason, {exited, _, _}, #data{port = Port}) ->
    catch port_close(Port),
    ok;
terminate(Reason, _, #data{port = Port, node = Node} = D) ->
    %% The server is going away with its C node still running: shut it
    %% down rather than leave an orphan behind.
    logger:info("shardnode ~ts: server terminating (~0tp); stopping the node",
                [Node, Reason]),
    _ = stop_poller(D),
    signal(D, "TERM"),
    case wait_exit(Port, ?TERMINATE_GRACE) of
        ok ->
            ok;
        timeout ->
            signal(D, "KILL"),
            _ = wait_exit(Port, 2000),
            ok
    end,
    catch port_close(Port),
    ok.

%% The phase a state is in (or was in, when the process exited).
phase({exited, _, Phase}) -> Phase;
phase(Phase) -> Phase.

%%====================================================================
%% Internal functions
%%====================================================================

safe_call(Pid, Request) ->
    try
        gen_statem:call(Pid, Request, infinity)
    catch
        exit:{Reason, _} when Reason =:= noproc; Reason =:= normal;
                              Reason =:= shutdown; element(1, Reason) =:= shutdown ->
            {error, not_found}
    end.

exited(Status, Phase, #data{node = Node} = D) ->
    Lines = lines(D),
    Typed = case D#data.start_error of
                undefined when Phase =:= starting ->
                    case [E || L <- Lines, E <- [start_error(L, host(D#data.command))], E =/= false] of
                        [E | _] -> E;
                        [] -> undefined
                    end;
                E -> E
            end,
    WaiterReply = case Phase of
                      _ when Typed =/= undefined -> {error, Typed};
                      failing -> {error, {not_ready, Lines}};
                      _ -> {error, {exited, Status, Lines}}
                  end,
    Replies = [{reply, From, WaiterReply} || From <- D#data.waiters]
        ++ [{reply, From, {ok, Status, D#data.sigkilled}} || From <- D#data.stoppers],
    case Phase of
        ready ->
            logger:warning("shardnode ~ts: exited unexpectedly with status ~b; "
                           "last output:~n~ts",
                           [Node, Status, [[L, $\n] || L <- last(10, Lines)]]);
        starting ->
            logger:warning("shardnode ~ts: exited with status ~b before it was ready; "
                           "last output:~n~ts",
                           [Node, Status, [[L, $\n] || L <- last(10, Lines)]]);
        stopping when Status =/= 0 ->
            logger:warning("shardnode ~ts: exited with status ~b after SIGTERM; "
                           "last output:~n~ts",
                           [Node, Status, [[L, $\n] || L <- last(10, Lines)]]);
        _ ->
            logger:info("shardnode ~ts: exited with status ~b", [Node, Status])
    end,
    {stop_and_reply, normal, Replies, D#data{waiters = [], stoppers = []}}.

start_poller(#data{node = Node, command = #{check := Check} = Command} = D) ->
    Server = self(),
    Host = host(Command),
    Poller = spawn_monitor(fun() -> poll(Server, Node, Check, Host) end),
    D#data{poller = Poller}.

stop_poller(#data{poller = undefined} = D) ->
    D;
stop_poller(#data{poller = {Pid, Ref}} = D) ->
    erlang:demonitor(Ref, [flush]),
    exit(Pid, kill),
    D#data{poller = undefined}.

%% Runs in its own process: net_adm:ping/1 waits forever on a node that
%% accepts the connection but never answers, and the server must stay free
%% to read the port and enforce the deadline meanwhile.
poll(Server, Node, Check, Host) ->
    case answers(Node, Check) andalso host_answers(Host) of
        true ->
            Server ! {ready, self()};
        false ->
            receive after ?POLL_INTERVAL -> ok end,
            poll(Server, Node, Check, Host)
    end.

%% A node whose entities run on another BEAM node is of no use before
%% that host is up: it is not ready while the host does not answer here
%% either (and the node's own "cannot reach" line ends the start).
host_answers(undefined) -> true;
host_answers(Host) when Host =:= node() -> true;
host_answers(Host) -> net_adm:ping(Host) =:= pong.

%% The host the node was told of (`--host H', or `--set host=H'), or
%% undefined.
host(#{args := Args}) ->
    host_arg(Args, undefined).

host_arg(["--host", H | Rest], _) -> host_arg(Rest, list_to_atom(H));
host_arg(["--set", "host=" ++ H | Rest], _) -> host_arg(Rest, list_to_atom(H));
host_arg([_ | Rest], Host) -> host_arg(Rest, Host);
host_arg([], Host) -> Host.

answers(Node, ping) ->
    net_adm:ping(Node) =:= pong andalso
        case catch gen_server:call({shardnode, Node}, shard_types, 2000) of
            {ok, _} -> true;
            _ -> false
        end;
answers(_Node, {epmd, Alive}) ->
    registered(Alive).

signal(#data{os_pid = OsPid}, Signal) ->
    _ = os:cmd("kill -" ++ Signal ++ " " ++ integer_to_list(OsPid)),
    ok.

wait_exit(Port, Timeout) ->
    receive
        {Port, {exit_status, _}} -> ok
    after Timeout ->
            timeout
    end.

add_line(Line, #data{node = Node, lines = Q, nlines = N} = D) ->
    {Level, Text, Meta} = parse_record(Line),
    logger:log(logger_level(Level), "~ts: ~ts", [Node, Text],
               Meta#{mfa => {?MODULE, ?FUNCTION_NAME, ?FUNCTION_ARITY}}),
    Q1 = queue:in(Line, Q),
    case N < ?MAX_LINES of
        true -> D#data{lines = Q1, nlines = N + 1};
        false -> D#data{lines = queue:drop(Q1)}
    end.

%% What a line the node wrote while starting says of why it cannot start
%% (node_app.c, dist_conn_handshake.c and peer_backoff.c write these
%% words), as a typed reason with the line's text, or false. `Host': the
%% node's host (its entities written in Erlang run there), or undefined.
-spec start_error(binary(), node() | undefined) ->
          {bad_cookie | name_in_use | port_in_use | host_unreachable, binary()} | false.
start_error(Line, Host) ->
    {_Level, Text, _Meta} = parse_record(Line),
    Has = fun(Part) -> binary:match(Text, Part) =/= nomatch end,
    Unreachable = Host =/= undefined andalso Has(<<"cannot reach ", (atom_to_binary(Host))/binary, " ">>),
    case {Has(<<"refused: wrong cookie">>), Has(<<"is taken in epmd">>),
          Has(<<"cannot start node">>) andalso Has(<<"is in use">>), Unreachable} of
        {true, _, _, _} -> {bad_cookie, Text};
        {_, true, _, _} -> {name_in_use, Text};
        {_, _, true, _} -> {port_in_use, Text};
        {_, _, _, true} -> {host_unreachable, Text};
        _ -> false
    end.

%% The logger level of a line the node wrote at `Level': only its
%% warnings and errors are above debug. A node logs a record at info for
%% each step of its start, each member it meets and each region it runs;
%% at info in the user's log, every node started would add a dozen lines.
-spec logger_level(debug | info | warning | error) -> logger:level().
logger_level(warning) -> warning;
logger_level(error) -> error;
logger_level(_) -> debug.

-define(IS_HEX(C), ((C >= $0 andalso C =< $9) orelse (C >= $a andalso C =< $f))).

%% @private
%% A record of the node's log (c_src/base/log.h):
%%   ts=2026-11-25T12:00:00.123Z level=info node=a@h msg="text" type=counter shard=3
%% as the level the node gave it, its msg unescaped, and its type and
%% shard as metadata; any other line is info as it is. (add_line/2 turns
%% the level into logger's with logger_level/1.)
-spec parse_record(binary()) -> {debug | info | warning | error, binary(), logger:metadata()}.
parse_record(Line) ->
    Re = "^ts=\\S+ level=(debug|info|warning|error)(?: node=(?:\"(?:[^\"\\\\]|\\\\.)*\"|\\S+))?"
         " msg=\"((?:[^\"\\\\]|\\\\.)*)\"(.*)$",
    case re:run(Line, Re, [{capture, all_but_first, binary}, unicode]) of
        {match, [Level, Msg, Rest]} ->
            {binary_to_atom(Level), unescape(Msg, <<>>), fields(Rest)};
        _ ->
            {info, Line, #{}}
    end.

unescape(<<"\\x", H1, H2, Rest/binary>>, Acc) when ?IS_HEX(H1), ?IS_HEX(H2) ->
    unescape(Rest, <<Acc/binary, (binary_to_integer(<<H1, H2>>, 16))>>);
unescape(<<"\\n", Rest/binary>>, Acc) -> unescape(Rest, <<Acc/binary, $\n>>);
unescape(<<"\\t", Rest/binary>>, Acc) -> unescape(Rest, <<Acc/binary, $\t>>);
unescape(<<"\\", C, Rest/binary>>, Acc) -> unescape(Rest, <<Acc/binary, C>>);
unescape(<<C, Rest/binary>>, Acc) -> unescape(Rest, <<Acc/binary, C>>);
unescape(<<>>, Acc) -> Acc.

fields(Rest) ->
    Type = case re:run(Rest, " type=([a-z][a-z0-9_]*)", [{capture, all_but_first, binary}]) of
               {match, [T]} -> #{shardnode_type => binary_to_atom(T)};
               nomatch -> #{}
           end,
    case re:run(Rest, " shard=([0-9]+)", [{capture, all_but_first, binary}]) of
        {match, [Sh]} -> Type#{shard => binary_to_integer(Sh)};
        nomatch -> Type
    end.

flush_partial(#data{partial = []} = D) ->
    D;
flush_partial(#data{partial = Partial} = D) ->
    add_line(iolist_to_binary(Partial), D#data{partial = []}).

lines(#data{lines = Q}) ->
    queue:to_list(Q).

last(N, List) ->
    lists:nthtail(max(0, length(List) - N), List).

%% The node name without its host: what epmd knows it by.
alive(Node) ->
    hd(string:split(atom_to_list(Node), "@")).
