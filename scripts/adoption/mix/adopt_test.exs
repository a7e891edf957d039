# The ExUnit tests of a user's Mix project that depends on shardnode
# (scripts/adoption-test.sh copies them there): nothing here knows where the
# dependency lives; the wrapper finds its C node in priv/.
defmodule AdoptTest do
  use ExUnit.Case
  import ExUnit.CaptureLog

  setup do
    name = ~c"adopt_c#{System.unique_integer([:positive])}@127.0.0.1"

    {result, log} =
      with_log([level: :debug], fn ->
        :shardnode.start_node(%{name: name, types: [:counter]})
      end)

    {:ok, node} = result
    on_exit(fn -> :ok = :shardnode.stop_node(node) end)
    %{node: node, log: log}
  end

  test "a counter on a C node counts", %{node: node} do
    priv = :code.priv_dir(:shardnode)
    assert File.regular?(Path.join(priv, "shardnode"))
    assert GenServer.call({:counter, node}, {"a", :incr}) == 1
    assert :shardnode.call(node, :counter, "a", :incr) == 2
  end

  test "the C node's info lines reach Logger at debug, with one timestamp", %{node: node, log: log} do
    [up] = for line <- String.split(log, "\n"), line =~ "#{node}: node #{node} up", do: line
    # the node logs it at info; only its warnings and errors are above debug
    assert up =~ "[debug]"
    # the node's own "12:00:00.000 INFO" prefix is gone: Logger's is the only one
    refute up =~ ~r/\d\d:\d\d:\d\d\.\d+.*\d\d:\d\d:\d\d\.\d+/
    refute up =~ "INFO"
  end
end
