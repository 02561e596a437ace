// `laya-run profile`: the modelled timeline of one execute (hal backends with a cost model).
#pragma once

namespace laya::tools {

// argv[1] == "profile". Exit codes as laya-run's: 0 ok, 1 model or runtime error, 2 bad arguments.
int cmd_profile(int argc, char** argv);

}  // namespace laya::tools
