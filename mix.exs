# shardnode for Mix projects: `{:shardnode, git: Url, ref: Sha}` (or
# `path: Dir`) in a project's deps builds the Erlang wrapper in
# erl_wrapper/src and, by the compiler below, the C node into priv/ with
# `make c` (the same build rebar3's compile hook runs). No Hex package and no
# network are needed: the wrapper depends on OTP alone. The machine needs the
# build packages that scripts/install-deps.sh lists; nothing here installs
# them. docs/contract.md "Adoption" is the contract.

defmodule Mix.Tasks.Compile.ShardnodeC do
  @moduledoc """
  Builds the shardnode C node (priv/shardnode) and the example entity
  plugins (priv/*.so) with `make c` in the directory of this mix.exs.
  make decides what is out of date, so a build with nothing changed
  costs one make run. Fails the compilation when make fails; make's own
  lines say why.
  """
  use Mix.Task.Compiler

  @root __DIR__

  @impl Mix.Task.Compiler
  def run(_args) do
    {_, status} =
      System.cmd("make", ["--no-print-directory", "-s", "c"],
        cd: @root,
        stderr_to_stdout: true,
        into: IO.stream(:stdio, :line)
      )

    if status != 0 do
      Mix.raise("shardnode: `make c` in #{@root} exited with status #{status}")
    end

    # Mix links priv/ into the build directory before any compiler runs;
    # in a fresh checkout priv/ did not exist then (make just made it), so
    # the link is made again now that it does.
    Mix.Project.build_structure()
    {:noop, []}
  end
end

defmodule Shardnode.MixProject do
  use Mix.Project

  def project do
    [
      app: :shardnode,
      version: "0.2.0",
      # Erlang sources only: Mix adds neither :elixir nor :logger to the
      # application's dependencies.
      language: :erlang,
      erlc_paths: ["erl_wrapper/src"],
      erlc_options: [:debug_info],
      elixirc_paths: [],
      compilers: [:shardnode_c | Mix.compilers()],
      deps: []
    ]
  end

  # As erl_wrapper/src/shardnode.app.src says for rebar3: common_test is
  # optional (only shardnode_ct uses it, inside common_test suites).
  def application do
    [
      mod: {:shardnode_app, []},
      registered: [:shardnode_sup],
      extra_applications: [common_test: :optional]
    ]
  end
end
