// The worker loop in a real managed process (svc_worker_echo) against the real daemon.
#include <gtest/gtest.h>

#include "support.h"
#include "svc/worker.h"

namespace svc::test {
namespace {

using json = nlohmann::json;

json workerDefinition(const std::string &name) {
    return {{"name", name}, {"command", SVC_WORKER_ECHO}, {"env", {{"SVC_TEST_CA", sharedTestkit().info().at("ca")}}}};
}

TEST(WorkerLoop, ServesTasksInOrderOverTheRealDaemon) {
    auto client = connect(sharedTestkit(), "tcp");
    const auto name = uniqueName("cpp-worker");
    client->addApp(workerDefinition(name));
    for (int i = 0; i < 5; ++i) EXPECT_EQ(client->runTask(name, "task-" + std::to_string(i), 60), "echo:task-" + std::to_string(i));
    const std::string binary("\x00\x01\xfe\xff", 4);
    EXPECT_EQ(client->runTask(name, binary, 60, "application/octet-stream"), "echo:" + binary);
    client->deleteApp(name);
}

TEST(WorkerLoop, AReplacedDefinitionServesFromItsNewProcess) {
    auto client = connect(sharedTestkit(), "rest");
    const auto name = uniqueName("cpp-superseded");
    client->addApp(workerDefinition(name));
    EXPECT_EQ(client->runTask(name, "first", 60), "echo:first");
    // A new definition of the same name replaces the process: the old key is superseded. The old
    // process is stopped by the daemon; the new one serves.
    client->addApp(workerDefinition(name));
    EXPECT_EQ(client->runTask(name, "second", 60), "echo:second");
    client->deleteApp(name);
}

TEST(WorkerLoop, OutsideAManagedProcessTheEnvironmentIsMissing) {
    // This test process is no managed process: SVC_PROCESS_KEY is unset.
    ASSERT_EQ(std::getenv("SVC_PROCESS_KEY"), nullptr);
    EXPECT_THROW(SvcWorker(TlsOptions{}), WorkerEnvironmentError);
}

} // namespace
} // namespace svc::test
