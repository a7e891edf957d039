# An entity written in Elixir (examples/cart.ex, copied into the project's
# lib/ by scripts/adoption-test.sh) run by the host's dispatcher for a real
# C node. The C node's side of entities written in Erlang and Elixir is not
# built yet, so the test plays the region's part itself; what it shows is
# that a user's Elixir module runs under the host, and that its processes
# end with their C node.
defmodule EntityTest do
  use ExUnit.Case

  test "an Elixir entity answers through the host and ends with its C node" do
    name = ~c"adopt_e#{System.unique_integer([:positive])}@127.0.0.1"
    {:ok, node} = :shardnode.start_node(%{name: name, types: [:counter]})

    {:ok, d} = :shardnode_entity_dispatcher.start_link(node, %{cart: Cart})
    Process.unlink(d)
    send(d, {:"$shardnode_host", :start, self(), :cart, "c1", :undefined, 1, {:add, :apple, 2}})
    assert_receive {:"$shardnode_done", "c1", pid, 1, :ok, {:state, %{apple: 2}}, :continue}, 5000

    send(pid, {:"$shardnode_entity", 2, :items})
    assert_receive {:"$shardnode_done", "c1", ^pid, 2, %{apple: 2}, :unchanged, :continue}, 5000

    ref = Process.monitor(pid)
    :ok = :shardnode.stop_node(node)
    assert_receive {:DOWN, ^ref, :process, ^pid, :killed}, 5000
  end
end
