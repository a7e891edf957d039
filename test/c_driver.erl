%% Test helper: builds a small C driver program from the project's sources
%% into a suite's priv_dir and runs it as a port speaking {packet, 4}, so a
%% common_test suite can compare a C module with the live BEAM term by term.
%%
%%   init_per_suite(Config) ->
%%       c_driver:build(Config, "phash2_driver", ["c_src/etf/phash2.c" | c_driver:term_sources()]).
%%   init_per_testcase(_, Config) -> [{port, c_driver:open(Config)} | Config].
%%   end_per_testcase(_, Config) -> c_driver:close(Config).
-module(c_driver).

-export([build/3, open/1, close/1, term_sources/0, project_root/1]).

-include_lib("common_test/include/ct.hrl").

%% @doc Compiles test/<Name>.c with `Sources' (paths relative to the project
%% root) against ei, into the suite's priv_dir. Returns the Config with
%% `{driver, Exe}', or `{fail, Reason}' for init_per_suite to return.
-spec build(list(), string(), [string()]) -> list() | {fail, string()}.
build(Config, Name, Sources) ->
    Main = filename:join("test", Name ++ ".c"),
    case project_root([Main | Sources]) of
        {error, Tried} ->
            {fail, lists:flatten(io_lib:format("~ts not found above ~p", [Main, Tried]))};
        {ok, Root} ->
            Exe = filename:join(?config(priv_dir, Config), Name),
            case compile(Root, [Main | Sources], Exe) of
                ok -> [{driver, Exe} | Config];
                {error, Out} -> {fail, "compiling " ++ Name ++ " failed:\n" ++ Out}
            end
    end.

%% @doc The sources term_validate needs (c_src/etf/term_validate.c checks map keys
%% through their canonical form), for the drivers that validate terms.
-spec term_sources() -> [string()].
term_sources() ->
    ["c_src/etf/term.c", "c_src/etf/term_read.c", "c_src/etf/term_validate.c", "c_src/etf/term_map_keys.c", "c_src/etf/entity_id.c", "c_src/etf/entity_id_scalar.c", "c_src/etf/term_tag.c", "c_src/etf/term_encode.c"].

%% @doc Starts the driver built by build/3.
-spec open(list()) -> port().
open(Config) ->
    open_port({spawn_executable, ?config(driver, Config)},
              [{packet, 4}, binary, exit_status, use_stdio]).

-spec close(list()) -> ok.
close(Config) ->
    catch port_close(?config(port, Config)),
    ok.

%% The first directory above this module's source, its beam or the current
%% directory that holds every file (rebar3 compiles test modules somewhere
%% under _build/, which is inside the project).
project_root(Files) ->
    Source = proplists:get_value(source, ?MODULE:module_info(compile), ""),
    Starts = [filename:dirname(filename:absname(P))
              || P <- [?FILE, Source, code:which(?MODULE)], is_list(P), P =/= ""]
             ++ [element(2, file:get_cwd())],
    Candidates = lists:append([[S | ancestors(S)] || S <- Starts]),
    case [D || D <- Candidates,
               lists:all(fun(F) -> filelib:is_regular(filename:join(D, F)) end, Files)] of
        [Root | _] -> {ok, Root};
        [] -> {error, Starts}
    end.

ancestors(Dir) ->
    case filename:dirname(Dir) of
        Dir -> [];
        Parent -> [Parent | ancestors(Parent)]
    end.

compile(Root, Files, Exe) ->
    ErlRoot = code:root_dir(),
    Args = ["-std=c11", "-D_GNU_SOURCE", "-O2", "-Wall", "-Wextra",
            "-I" ++ filename:join([ErlRoot, "usr", "include"]),
            "-I" ++ filename:join(Root, "c_src")]
           ++ [filename:join(Root, F) || F <- Files]
           ++ ["-L" ++ filename:join([ErlRoot, "usr", "lib"]),
               "-lei", "-lpthread", "-lm", "-o", Exe],
    Cmd = string:join(["cc" | [quote(A) || A <- Args]], " "),
    ct:log("~ts", [Cmd]),
    Out = os:cmd(Cmd ++ " 2>&1; echo \"exit=$?\""),
    case string:find(Out, "exit=0\n") of
        nomatch -> {error, Out};
        _ -> ct:log("~ts", [Out]), ok
    end.

quote(S) ->
    "'" ++ lists:append([case C of $' -> "'\\''"; _ -> [C] end || C <- S]) ++ "'".
