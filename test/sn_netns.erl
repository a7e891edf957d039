%% Test networks of Linux network namespaces, shared by the suites that run
%% C nodes each in a namespace of its own (partition, discovery): a bridge
%% with the test node's address on it, a namespace per node joined to it
%% by a veth pair, and the checks those suites make of their clusters.
%% Needs root and iproute2.
-module(sn_netns).

-export([setup/4, teardown/2, sh/1, same_up_members/2]).

%% Makes Bridge with address Net ++ "254"/24, and per {NS, Addr} in Nodes
%% a namespace with eth0 at Addr, its veth peer named VethPrefix ++ K (K
%% its place in Nodes) on the bridge; Extra(NS) gives more commands to run
%% for each namespace. ok, or {error, What} naming the command that failed.
-spec setup(string(), string(), [{string(), string()}], fun((string()) -> [string()])) -> ok | {error, string()}.
setup(Bridge, Net, Nodes, Extra) ->
    setup(Bridge, Net, "v" ++ Bridge, Nodes, Extra).

setup(Bridge, Net, Veth, Nodes, Extra) ->
    Steps = ["ip link add " ++ Bridge ++ " type bridge",
             "ip addr add " ++ Net ++ "254/24 dev " ++ Bridge,
             "ip link set " ++ Bridge ++ " up"]
        ++ lists:append(
             [["ip netns add " ++ NS,
               "ip link add " ++ Veth ++ integer_to_list(K) ++ " type veth peer name eth0 netns " ++ NS,
               "ip link set " ++ Veth ++ integer_to_list(K) ++ " master " ++ Bridge ++ " up",
               "ip -n " ++ NS ++ " addr add " ++ Addr ++ "/24 dev eth0",
               "ip -n " ++ NS ++ " link set eth0 up",
               "ip -n " ++ NS ++ " link set lo up"] ++ Extra(NS)
              || {K, {NS, Addr}} <- lists:zip(lists:seq(1, length(Nodes)), Nodes)]),
    run_all(Steps).

run_all([]) -> ok;
run_all([Step | Rest]) ->
    case sh(Step) of
        ok -> run_all(Rest);
        {error, Out} -> {error, Step ++ ": " ++ string:trim(Out)}
    end.

%% Kills what runs in each namespace, deletes them and the bridge; what
%% is not there is no error.
-spec teardown(string(), [string()]) -> ok.
teardown(Bridge, Namespaces) ->
    [begin
         sh("ip netns pids " ++ NS ++ " 2>/dev/null | xargs -r kill -9"),
         sh("ip netns del " ++ NS ++ " 2>/dev/null")
     end || NS <- Namespaces],
    %% A namespace deleted is dismantled later, by the kernel, and with it
    %% the veth pair; until then (seconds, or longer while something still
    %% holds it) the host's end keeps its name, and the next setup fails
    %% with "File exists". Deleting our end takes the pair at once.
    [sh("ip link del v" ++ Bridge ++ integer_to_list(K) ++ " 2>/dev/null")
     || K <- lists:seq(1, length(Namespaces))],
    sh("ip link del " ++ Bridge ++ " 2>/dev/null"),
    ok.

%% Runs a shell command: ok, or {error, Output} when it exits non-zero.
-spec sh(string()) -> ok | {error, string()}.
sh(Cmd) ->
    Out = os:cmd(Cmd ++ " 2>&1; echo \"rc=$?\""),
    case string:split(string:trim(Out), "rc=", trailing) of
        [Before, "0"] -> _ = Before, ok;
        [Before, _] -> {error, Before};
        _ -> {error, Out}
    end.

%% Every node of `At' lists exactly `Expected' as its up members, and no
%% member as unreachable.
-spec same_up_members([node()], [node()]) -> boolean().
same_up_members(At, Expected) ->
    lists:all(fun(N) ->
                      case catch gen_server:call({shardnode, N}, members, 2000) of
                          {ok, Ms} ->
                              lists:sort([M || #{node := M, status := up} <- Ms]) =:= lists:sort(Expected)
                                  andalso [] =:= [M || #{status := unreachable} = M <- Ms];
                          _ -> false
                      end
              end, At).
