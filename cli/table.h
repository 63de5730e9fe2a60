// Table: left-aligned text columns for the CLI's human-readable output.
//
//   Table t({"QUEUE", "DUE"});
//   t.AddRow({"emails", "3"});
//   std::cout << t.ToString();
//
// Thread safety: none needed; one table per command.
#ifndef JOBWIRE_CLI_TABLE_H_
#define JOBWIRE_CLI_TABLE_H_

#include <string>
#include <vector>

namespace jobwire::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header);

  // REQUIRES: as many cells as header columns.
  void AddRow(std::vector<std::string> cells);
  bool empty() const { return rows_.empty(); }

  // Header and rows, columns padded to their widest cell, separated by two
  // spaces; the last column is not padded.
  std::string ToString() const;

 private:
  std::vector<std::vector<std::string>> rows_;  // rows_[0] is the header
};

}  // namespace jobwire::cli

#endif  // JOBWIRE_CLI_TABLE_H_
