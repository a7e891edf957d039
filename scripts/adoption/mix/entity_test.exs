# An entity written in Elixir (examples/cart.ex, copied into the project's
# lib/ by scripts/adoption-test.sh), hosted on this node for a real C node
# started with `entities`: callers reach it through the C node as any
# entity, and its process ends with its C node.
defmodule EntityTest do
  use ExUnit.Case

  test "an Elixir entity answers through its C node and ends with it" do
    name = ~c"adopt_e#{System.unique_integer([:positive])}@127.0.0.1"
    {:ok, node} = :shardnode.start_node(%{name: name, types: [:counter], entities: %{cart: Cart}})

    assert :ok == GenServer.call({:cart, node}, {"c1", {:add, :apple, 2}}, 10_000)
    assert %{apple: 2} == GenServer.call({:cart, node}, {"c1", :items}, 10_000)
    send({:cart, node}, {"c1", {:add, :pear, 1}})
    assert_receive {:cart, "c1", :ok}, 5000
    assert {:ok, %{apple: 2, pear: 1}} == GenServer.call({:cart, node}, {"c1", :checkout}, 10_000)

    assert :ok == GenServer.call({:cart, node}, {"c2", {:add, :fig, 1}}, 10_000)
    {^node, d} = List.keyfind(:shardnode_entity_host.dispatchers(), node, 0)
    [{:cart, "c2", pid}] = :shardnode_entity_dispatcher.entities(d)
    ref = Process.monitor(pid)
    :ok = :shardnode.stop_node(node)
    assert_receive {:DOWN, ^ref, :process, ^pid, _}, 5000
  end
end
