// `lazyscope tag RUN TAG... [--remove]`, `rename RUN NAME`, `delete RUN [--yes]`:
// changes to recorded runs, through the storage editor.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <stdexcept>

#include "cli_args.h"
#include "commands.h"
#include "edit/history_editor.h"
#include "query/history_reader.h"

namespace lazyscope::runner {

int tag_command(const std::vector<std::string>& raw) {
  const CommandArgs args = parse_command_args(raw, {"--remove"}, {});
  if (args.positional.size() < 2) throw std::invalid_argument("tag needs a RUN and at least one TAG");
  int64_t run_id = 0;
  std::vector<std::string> tags;
  {
    storage::HistoryReader reader(args.history);
    run_id = resolve_run(reader, args.positional[0], args.history);
    const auto summary = reader.run_summary(run_id);
    if (summary) tags.assign(summary->run().tags().begin(), summary->run().tags().end());
  }
  const std::vector<std::string> given(args.positional.begin() + 1, args.positional.end());
  if (args.has("--remove")) {
    std::erase_if(tags,
                  [&](const std::string& tag) { return std::find(given.begin(), given.end(), tag) != given.end(); });
  } else {
    tags.insert(tags.end(), given.begin(), given.end());  // the editor drops duplicates
  }
  storage::HistoryEditor(args.history).set_tags(run_id, tags);
  std::cout << "run #" << run_id << " tags:";
  const auto summary = storage::HistoryReader(args.history).run_summary(run_id);
  if (!summary) throw NotFound("run " + std::to_string(run_id) + " was deleted meanwhile");
  for (const auto& tag : summary->run().tags()) std::cout << " " << tag;
  std::cout << "\n";
  return 0;
}

int rename_command(const std::vector<std::string>& raw) {
  const CommandArgs args = parse_command_args(raw, {}, {});
  if (args.positional.size() != 2) throw std::invalid_argument("rename needs a RUN and a NAME");
  const int64_t run_id = resolve_run(storage::HistoryReader(args.history), args.positional[0], args.history);
  storage::HistoryEditor(args.history).rename_run(run_id, args.positional[1]);
  std::cout << "run #" << run_id << " is now \"" << args.positional[1] << "\"\n";
  return 0;
}

int delete_command(const std::vector<std::string>& raw) {
  const CommandArgs args = parse_command_args(raw, {"--yes"}, {});
  if (args.positional.size() != 1) throw std::invalid_argument("delete needs one RUN");
  std::string description;
  int64_t run_id = 0;
  {
    storage::HistoryReader reader(args.history);
    run_id = resolve_run(reader, args.positional[0], args.history);
    const auto summary = reader.run_summary(run_id);
    description = "run #" + std::to_string(run_id) + " \"" + (summary ? summary->run().name() : "") + "\"";
  }
  if (!args.has("--yes")) {
    // Never guess consent: without a person at a terminal, --yes is required.
    if (!isatty(STDIN_FILENO)) {
      throw std::invalid_argument("deleting " + description + " needs --yes when not asked at a terminal");
    }
    std::cout << "delete " << description << " and everything recorded for it? [y/N] " << std::flush;
    std::string answer;
    std::getline(std::cin, answer);
    if (answer != "y" && answer != "yes") {
      std::cout << "kept " << description << "\n";
      return 1;
    }
  }
  storage::HistoryEditor(args.history).delete_run(run_id);
  std::cout << "deleted " << description << "\n";
  return 0;
}

}  // namespace lazyscope::runner
