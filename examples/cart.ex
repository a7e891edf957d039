# A shopping cart as an entity written in Elixir (:shardnode_entity): the
# Elixir twin of examples/cart.erl. Its state is a map of item => count;
# listing leaves it unchanged (nothing to write), checkout empties the cart
# and ends it.
defmodule Cart do
  @behaviour :shardnode_entity

  @impl true
  def init(_id, :undefined), do: {:ok, %{}}
  def init(_id, items), do: {:ok, items}

  @impl true
  def handle({:add, item, n}, items) when is_integer(n) and n > 0,
    do: {:reply, :ok, Map.update(items, item, n, &(&1 + n))}

  def handle({:remove, item}, items), do: {:reply, :ok, Map.delete(items, item)}
  def handle(:items, items), do: {:reply, items, items}
  def handle(:checkout, items), do: {:stop, {:ok, items}, %{}}
  def handle(_other, items), do: {:reply, {:error, :unknown_request}, items}
end
