// The librdkafka bugs this project works around, by the version of the library the process
// runs with (rd_kafka_version(), not the headers' RD_KAFKA_VERSION: a library upgraded under a
// built binary counts). Each is probed on the library the tests run with by
// tests/component/service/librdkafka_behaviour_test.cc, which fails when an upgrade fixes one
// (or brings one back) so that its answer here is revisited.
#pragma once

namespace fraud::kafka {

// ListConsumerGroupOffsets through a client that has no consumer group (a producer) ends the
// process when the group's coordinator moves: librdkafka 2.0.2 answers the OffsetFetch's
// NOT_COORDINATOR by asking the client's own group to look the coordinator up again and
// dereferences the missing one (rd_kafka_handle_OffsetFetch). makeGroupAdminClient() then
// makes a consumer-type client that never joins. Fixed in 2.8.0 (probed); the releases between
// were not tested and count as affected.
[[nodiscard]] bool offsetFetchNeedsAGroupClient();

}  // namespace fraud::kafka
