#pragma once

// The live service's test hooks: what an integration test asks of a fraud-detector it starts as
// a child process, through the environment. Compiled only into builds with FRAUD_TEST_HOOKS
// (the test presets; never the release preset or the image: detectors/base/sync_point.h), where
// main() installs them before the service starts.
//
//   FRAUD_TEST_HOLD_COMMIT_FILE=PATH   while the file PATH exists, each commit stops at
//                                      kRecordsFlushedSyncPoint (its records on the broker, its
//                                      offsets not yet sent), having written PATH.held; the test
//                                      kills the process there (tests/integration/service/
//                                      live_service_test.cc)

#if !FRAUD_TEST_HOOKS
#error "service/test_hooks.h is for builds with FRAUD_TEST_HOOKS only"
#endif

namespace fraud::service {

// Sets the sync-point callbacks the environment asks for; logs each one it sets.
void installTestHooksFromEnvironment();

}  // namespace fraud::service
