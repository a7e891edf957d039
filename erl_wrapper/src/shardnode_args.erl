%% @doc The command line of a C node: turns the options of
%% {@link shardnode:start_node/1} into the executable to run, its argv, and
%% how to tell when the node is ready.
%%
%% Nothing here starts a process or talks to a node; the result is plain
%% data for {@link shardnode_node}, which runs it. The flags are those of
%% `priv/shardnode' (docs/contract.md):
%%
%% ```
%% {ok, #{node := 'c1@127.0.0.1', args := Args}} =
%%     shardnode_args:command(#{name => "c1@127.0.0.1", cookie => secret,
%%                              config => #{number_of_shards => 10}}),
%% ["--name", "c1@127.0.0.1", "--stop-on-stdin-eof", "--cookie", "secret",
%%  "--set", "number_of_shards=10"] = Args.
%% '''
-module(shardnode_args).

-export([command/1, redact/1]).

-export_type([command/0, check/0]).

-include_lib("kernel/include/file.hrl").

-define(DEFAULT_READY_TIMEOUT, 10000).

-type check() :: ping | {epmd, Alive :: string()}.
%% How to tell that the node is up: `ping' (a ping, then a `shard_types'
%% call to its admin) when this node can talk to it; `{epmd, Alive}' (its
%% name registered in epmd) when one node uses long names and the other
%% short names.

-type command() ::
        #{node := node(),
          executable := file:filename(),
          args := [string()],
          check := check(),
          ready_timeout := non_neg_integer(),
          entities := #{atom() => module()}}.
%% A validated command: the node's name, the executable with its argv (for
%% `open_port({spawn_executable, Executable}, [{args, Args}, ...])'), the
%% readiness check and the milliseconds to wait for it.

%%====================================================================
%% API
%%====================================================================

%% @doc Validates start options (see {@link shardnode:start_opts()}) and
%% turns them into the command line of the C node.
%%
%% The argv holds, in this order: `--name' or `--sname';
%% `--stop-on-stdin-eof' (the node's stdin is the port, so a node never
%% outlives the BEAM that started it); `--cookie' (the option, else this
%% node's cookie) or `--cookie-file'; `--port'; `--join' and `--types' as
%% comma-separated lists; with `entities', `--host' (this node) and
%% `--host-types' (their types, sorted); `--proxy-only'; one `--singleton Name=Type' per
%% `singletons' entry, in order; `--config'; one `--set Key=Value'
%% per `config' entry, sorted by key; then `extra_args' as they are. With
%% `netns' the executable is `ip' and the argv starts with
%% `netns exec NS Executable'.
%%
%% Errors: `{unknown_option, Key}', `{bad_option, {Key, Value}}' (also
%% `{bad_option, name_and_sname}' and `{bad_option,
%% cookie_and_cookie_file}'), `missing_name' (neither `name' nor `sname'),
%% `{executable_not_found, Tried}'.
-spec command(shardnode:start_opts()) -> {ok, command()} | {error, term()}.
command(Opts) when is_map(Opts) ->
    Known = [name, sname, cookie, cookie_file, port, join, types, entities, proxy_only, singletons,
             config, config_file, extra_args, executable, ready_timeout, netns],
    case [K || K <- maps:keys(Opts), not lists:member(K, Known)] of
        [] ->
            try
                {ok, build_command(Opts)}
            catch
                throw:{command_error, Reason} -> {error, Reason}
            end;
        [Unknown | _] ->
            {error, {unknown_option, Unknown}}
    end;
command(Opts) ->
    {error, {bad_option, Opts}}.

%% @doc The argv with its secrets replaced by asterisks, to go into the
%% logs: the value of every `--cookie' (the cookie is a password), and of
%% every `--set postgres_conninfo=' (a connection string may hold the
%% database's password).
-spec redact([string()]) -> [string()].
redact(["--cookie", _ | Rest]) -> ["--cookie", "********" | redact(Rest)];
redact(["--set", "postgres_conninfo=" ++ _ | Rest]) ->
    ["--set", "postgres_conninfo=********" | redact(Rest)];
redact([Arg | Rest]) -> [Arg | redact(Rest)];
redact([]) -> [].

%%====================================================================
%% Internal functions
%%====================================================================

build_command(Opts) ->
    {NameArgs, Node, Mode} = name(Opts),
    %% The port is the node's stdin: when this BEAM dies, the node sees EOF
    %% and leaves, instead of running on unsupervised.
    Args = lists:append([NameArgs,
                         ["--stop-on-stdin-eof"],
                         cookie_args(Opts),
                         port_args(Opts),
                         list_args("--join", join, Opts),
                         types_args(Opts),
                         entity_args(Opts),
                         proxy_args(Opts),
                         singleton_args(Opts),
                         config_file_args(Opts),
                         set_args(Opts),
                         extra_args(Opts)]),
    {Exe, ExeArgs} = in_netns(Opts, executable(Opts), Args),
    #{node => Node,
      executable => Exe,
      args => ExeArgs,
      check => check(Node, Mode, tls(Opts)),
      ready_timeout => ready_timeout(Opts),
      entities => maps:get(entities, Opts, #{})}.

%% `netns': run the node inside a Linux network namespace, as
%% `ip netns exec NS Exe Args'. ip execs the node in its place, so the OS
%% pid, the signals and the port's stdin are the node's own.
in_netns(#{netns := NS0}, Exe, Args) ->
    NS = to_string(netns, NS0),
    case os:find_executable("ip") of
        false -> throw({command_error, {executable_not_found, ["ip"]}});
        Ip -> {Ip, ["netns", "exec", NS, Exe | Args]}
    end;
in_netns(_, Exe, Args) ->
    {Exe, Args}.

name(#{name := _, sname := _}) ->
    bad(name_and_sname);
name(#{name := Name0}) ->
    Name = to_string(name, Name0),
    case string:split(Name, "@") of
        [Alive, Host] when Alive =/= "", Host =/= "" ->
            {["--name", Name], list_to_atom(Name), longnames};
        _ ->
            %% erl would guess the host; the C node is told exactly
            bad({name, Name0})
    end;
name(#{sname := SName0}) ->
    SName = to_string(sname, SName0),
    case string:split(SName, "@") of
        [Alive] when Alive =/= "" ->
            {ok, Host} = inet:gethostname(),
            Short = hd(string:split(Host, ".")),
            {["--sname", SName], list_to_atom(Alive ++ "@" ++ Short), shortnames};
        [Alive, Host] when Alive =/= "", Host =/= "" ->
            {["--sname", SName], list_to_atom(SName), shortnames};
        _ ->
            bad({sname, SName0})
    end;
name(_) ->
    throw({command_error, missing_name}).

%% Whether the C node speaks TLS distribution (its config sets
%% tls_certfile).
tls(#{config := #{tls_certfile := _}}) -> true;
tls(_) -> false.

%% Ask with ping when this node can reach the C node; a long-named node
%% cannot connect to a short-named one or the other way round, nor a plain
%% node to a TLS one, so then the epmd registration is the sign of life.
check(Node, Mode, Tls) ->
    case Tls =:= (init:get_argument(proto_dist) =:= {ok, [["inet_tls"]]}) of
        true -> check(Node, Mode);
        false -> {epmd, alive(Node)}
    end.

check(Node, Mode) ->
    Ours = case erlang:is_alive() of
               true ->
                   case net_kernel:longnames() of
                       true -> longnames;
                       false -> shortnames;
                       _ -> none
                   end;
               false ->
                   none
           end,
    case Ours =:= Mode of
        true -> ping;
        false -> {epmd, alive(Node)}
    end.

alive(Node) ->
    hd(string:split(atom_to_list(Node), "@")).

cookie_args(#{cookie := _, cookie_file := _}) ->
    bad(cookie_and_cookie_file);
cookie_args(#{cookie := Cookie}) ->
    ["--cookie", to_string(cookie, Cookie)];
cookie_args(#{cookie_file := File}) ->
    ["--cookie-file", to_string(cookie_file, File)];
cookie_args(_) ->
    case erlang:get_cookie() of
        nocookie -> [];
        Cookie -> ["--cookie", atom_to_list(Cookie)]
    end.

port_args(#{port := Port}) when is_integer(Port), Port >= 0, Port =< 65535 ->
    ["--port", integer_to_list(Port)];
port_args(#{port := Port}) ->
    bad({port, Port});
port_args(_) ->
    [].

%% `types': the built-in and plugin types the node hosts; `[]' given
%% means none of them (its types are then its `entities' alone), where no
%% `types' at all means the defaults.
types_args(#{types := []}) -> ["--types", ""];
types_args(Opts) -> list_args("--types", types, Opts).

list_args(Flag, Key, Opts) ->
    case maps:get(Key, Opts, []) of
        [] ->
            [];
        List when is_list(List) ->
            [Flag, lists:join(",", [to_string(Key, X) || X <- List])];
        Other ->
            bad({Key, Other})
    end.

%% `entities': types written in Erlang or Elixir, run on this node (the
%% host) as processes; the C node is told their names and where they run.
entity_args(#{entities := Entities}) when is_map(Entities), map_size(Entities) =:= 0 ->
    [];
entity_args(#{entities := Entities}) when is_map(Entities) ->
    Types = lists:sort(maps:keys(Entities)),
    case lists:all(fun is_atom/1, Types) andalso lists:all(fun is_atom/1, maps:values(Entities)) of
        true ->
            ["--host", atom_to_list(node()),
             "--host-types", lists:join(",", [atom_to_list(T) || T <- Types])];
        false ->
            bad({entities, Entities})
    end;
entity_args(#{entities := Other}) ->
    bad({entities, Other});
entity_args(_) ->
    [].

proxy_args(#{proxy_only := true}) -> ["--proxy-only"];
proxy_args(#{proxy_only := false}) -> [];
proxy_args(#{proxy_only := Other}) -> bad({proxy_only, Other});
proxy_args(_) -> [].

singleton_args(#{singletons := List}) when is_list(List) ->
    lists:append([singleton_arg(S) || S <- List]);
singleton_args(#{singletons := Other}) ->
    bad({singletons, Other});
singleton_args(_) ->
    [].

singleton_arg({Name, Type}) when is_atom(Name), is_atom(Type) ->
    ["--singleton", atom_to_list(Name) ++ "=" ++ atom_to_list(Type)];
singleton_arg(Other) ->
    bad({singletons, Other}).

config_file_args(#{config_file := File}) ->
    ["--config", to_string(config_file, File)];
config_file_args(_) ->
    [].

set_args(#{config := Config}) when is_map(Config) ->
    lists:append([["--set", to_string(config, K) ++ "=" ++ config_value(V)]
                  || {K, V} <- lists:sort(maps:to_list(Config))]);
set_args(#{config := Other}) ->
    bad({config, Other});
set_args(_) ->
    [].

%% Strings and paths go as their characters; every other term as Erlang
%% source text, which is what file:consult/1 would read in a config file.
config_value(V) when is_atom(V) -> atom_to_list(V);
config_value(V) when is_integer(V) -> integer_to_list(V);
config_value(V) when is_binary(V) -> unicode:characters_to_list(V);
config_value(V) when is_list(V) ->
    case io_lib:printable_unicode_list(V) of
        true -> V;
        false -> lists:flatten(io_lib:format("~0tp", [V]))
    end;
config_value(V) ->
    lists:flatten(io_lib:format("~0tp", [V])).

%% A list of arguments. One string ("--verbose") is a list of character
%% codes, each of which would become an argument ("45", "45", ...): refused,
%% since no one means that.
extra_args(#{extra_args := [C | _] = Args}) when is_integer(C) ->
    case io_lib:printable_unicode_list(Args) of
        true -> bad({extra_args, Args});
        false -> [to_string(extra_args, A) || A <- Args]
    end;
extra_args(#{extra_args := Args}) when is_list(Args) ->
    [to_string(extra_args, A) || A <- Args];
extra_args(#{extra_args := Other}) ->
    bad({extra_args, Other});
extra_args(_) ->
    [].

ready_timeout(#{ready_timeout := T}) when is_integer(T), T >= 0 -> T;
ready_timeout(#{ready_timeout := T}) -> bad({ready_timeout, T});
ready_timeout(_) -> ?DEFAULT_READY_TIMEOUT.

executable(#{executable := Exe0}) ->
    Exe = filename:absname(to_string(executable, Exe0)),
    case is_executable(Exe) of
        true -> Exe;
        false -> throw({command_error, {executable_not_found, [Exe]}})
    end;
executable(_) ->
    Candidates = default_executables(),
    case lists:filter(fun is_executable/1, Candidates) of
        [Exe | _] -> Exe;
        [] -> throw({command_error, {executable_not_found, Candidates}})
    end.

%% $SHARDNODE_EXECUTABLE when set (to test another build); else
%% priv/shardnode of the application; then, for a checkout where the
%% application was built by rebar3 into _build/ while `make' put the
%% executable into the project's priv/, priv/shardnode in each directory
%% above this module's beam file.
default_executables() ->
    case os:getenv("SHARDNODE_EXECUTABLE") of
        Exe when is_list(Exe), Exe =/= "" -> [filename:absname(Exe)];
        _ -> default_executables_in_tree()
    end.

default_executables_in_tree() ->
    PrivDir = case code:priv_dir(shardnode) of
                  {error, _} -> [];
                  Dir -> [filename:join(Dir, "shardnode")]
              end,
    Above = case code:which(?MODULE) of
                Beam when is_list(Beam) ->
                    [filename:join([D, "priv", "shardnode"])
                     || D <- ancestors(filename:dirname(filename:absname(Beam)))];
                _ ->
                    []
            end,
    lists:usort(PrivDir) ++ [C || C <- Above, not lists:member(C, PrivDir)].

ancestors(Dir) ->
    case filename:dirname(Dir) of
        Dir -> [];
        Parent -> [Parent | ancestors(Parent)]
    end.

is_executable(Path) ->
    case file:read_file_info(Path) of
        {ok, #file_info{type = regular, mode = Mode}} ->
            Mode band 8#111 =/= 0;
        _ ->
            false
    end.

to_string(_Key, A) when is_atom(A) -> atom_to_list(A);
to_string(_Key, B) when is_binary(B) -> unicode:characters_to_list(B);
to_string(Key, L) when is_list(L) ->
    case io_lib:printable_unicode_list(L) of
        true -> L;
        false -> bad({Key, L})
    end;
to_string(_Key, I) when is_integer(I) -> integer_to_list(I);
to_string(Key, Other) -> bad({Key, Other}).

bad(What) ->
    throw({command_error, {bad_option, What}}).
