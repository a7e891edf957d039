%% @private
%% @doc The table of this node's clients, one per shardnode node called
%% ({@link shardnode_client}): started on the first call to a node, gone
%% when its connection to that node is (the next call starts a new one).
%%
%% The table (`shardnode_clients', public for reads) maps a node to its
%% client's pid, so a call finds its client with one ets:lookup/2; only
%% starting one goes through this server, so two first calls to one node
%% at once share one client.
-module(shardnode_clients).
-behaviour(gen_server).

-export([start_link/0, client/1]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2]).

-define(TABLE, shardnode_clients).

-spec start_link() -> {ok, pid()} | {error, term()}.
start_link() ->
    gen_server:start_link({local, ?MODULE}, ?MODULE, [], []).

%% @doc The client of `Node', started if there is none. Starts the
%% shardnode application if it is not running (a node that only calls C
%% nodes it did not start need not have started it).
-spec client(node()) -> pid().
client(Node) ->
    try ets:lookup(?TABLE, Node) of
        [{_, Pid}] -> Pid;
        [] -> gen_server:call(?MODULE, {client, Node}, infinity)
    catch
        error:badarg ->
            {ok, _} = application:ensure_all_started(shardnode),
            gen_server:call(?MODULE, {client, Node}, infinity)
    end.

init([]) ->
    _ = ets:new(?TABLE, [named_table, protected, set, {read_concurrency, true}]),
    {ok, #{}}.

handle_call({client, Node}, _From, Monitors) ->
    case ets:lookup(?TABLE, Node) of
        [{_, Pid}] ->
            {reply, Pid, Monitors};
        [] ->
            {Pid, MRef} = shardnode_client:start(Node),
            true = ets:insert(?TABLE, {Node, Pid}),
            {reply, Pid, Monitors#{MRef => Node}}
    end.

handle_cast(_Msg, Monitors) ->
    {noreply, Monitors}.

handle_info({'DOWN', MRef, process, Pid, _Reason}, Monitors) ->
    case maps:take(MRef, Monitors) of
        {Node, Rest} ->
            _ = ets:delete_object(?TABLE, {Node, Pid}),
            {noreply, Rest};
        error ->
            {noreply, Monitors}
    end;
handle_info(_Other, Monitors) ->
    {noreply, Monitors}.
