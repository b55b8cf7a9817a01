// File ▸ Run script…: what to run and how (script, its arguments, devices,
// bf16, ops forced to fall back, run name and tags), with the command line it
// will start shown live. Options the installed runner does not know yet (its
// `--help` lacks the flag) are disabled and say so.
#pragma once

#include <QDialog>
#include <QStringList>

#include "loaders/script_run.h"

class QCheckBox;
class QComboBox;
class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace lazyscope::gui {

class RunScriptDialog : public QDialog {
  Q_OBJECT

 public:
  RunScriptDialog(const QString &history, QWidget *parent = nullptr);

  ScriptRunOptions options() const;
  void setOptions(const ScriptRunOptions &options);
  // The flags the runner accepts; options with other flags are disabled.
  void setSupportedFlags(const QStringList &flags);
  QStringList commandLine() const;

 private:
  void browse();
  void update();
  void askRunnerForFlags();

  QString history_;
  QStringList supported_;
  QLineEdit *script_;
  QLineEdit *args_;
  QComboBox *deviceKind_;
  QSpinBox *deviceCount_;
  QCheckBox *bf16_;
  QLineEdit *fallbacks_;
  QLineEdit *name_;
  QLineEdit *tags_;
  QLabel *command_;
  QLabel *problem_;
  QDialogButtonBox *buttons_;
};

// "a, b ,c" -> {"a", "b", "c"}.
QStringList splitList(const QString &text);

}  // namespace lazyscope::gui
