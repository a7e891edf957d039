%% Entity plugins built by the suites that need types of their own, as a
%% user builds one (docs/entity-api.md): cc over test/limit_type.c, whose
%% type name is given at compile time and which answers every message Msg
%% with {TypeName, Msg}.
-module(test_plugins).

-export([build/2, project_root/0]).

%% Builds the plugin of type Name (an atom) as Dir/Name.so. Returns ok, or
%% fails the test case with cc's output.
-spec build(file:filename(), atom()) -> ok.
build(Dir, Name) ->
    Root = project_root(),
    ok = filelib:ensure_path(Dir),
    ErlInc = filename:join([code:root_dir(), "usr", "include"]),
    Cmd = io_lib:format("cc -std=c11 -O2 -fPIC -shared -I'~ts' -I'~ts' '-DTYPE_NAME=\"~s\"' -o '~ts' '~ts' 2>&1; echo exit=$?",
                        [filename:join([Root, "c_src", "entity"]), ErlInc, Name,
                         filename:join(Dir, atom_to_list(Name) ++ ".so"),
                         filename:join([Root, "test", "limit_type.c"])]),
    Out = os:cmd(lists:flatten(Cmd)),
    case string:find(Out, "exit=0") of
        nomatch -> ct:fail({plugin_build_failed, Name, Out});
        _ -> ok
    end.

%% The checkout: the first directory above this module (or the working
%% directory) that holds priv/shardnode and test/limit_type.c.
-spec project_root() -> file:filename().
project_root() ->
    case c_driver:project_root(["priv/shardnode", "test/limit_type.c"]) of
        {ok, Root} -> Root;
        {error, Starts} -> ct:fail({project_root_not_found, Starts})
    end.
