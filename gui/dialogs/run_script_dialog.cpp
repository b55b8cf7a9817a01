#include "dialogs/run_script_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

namespace lazyscope::gui {

QStringList splitList(const QString &text) {
  QStringList out;
  for (const QString &part : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
    if (!part.trimmed().isEmpty()) out << part.trimmed();
  }
  return out;
}

RunScriptDialog::RunScriptDialog(const QString &history, QWidget *parent)
    : QDialog(parent),
      history_(history),
      script_(new QLineEdit(this)),
      args_(new QLineEdit(this)),
      deviceKind_(new QComboBox(this)),
      deviceCount_(new QSpinBox(this)),
      bf16_(new QCheckBox(tr("Compute in bfloat16"), this)),
      fallbacks_(new QLineEdit(this)),
      name_(new QLineEdit(this)),
      tags_(new QLineEdit(this)),
      command_(new QLabel(this)),
      problem_(new QLabel(this)),
      buttons_(new QDialogButtonBox(QDialogButtonBox::Cancel, this)) {
  setObjectName(QStringLiteral("runScriptDialog"));
  setWindowTitle(tr("Run Script"));
  script_->setObjectName(QStringLiteral("runScript"));
  script_->setPlaceholderText(tr("train.py"));
  args_->setPlaceholderText(tr("--steps 100 --lr 0.1"));
  deviceKind_->addItem(tr("default"), QString());
  deviceKind_->addItem(QStringLiteral("lazy"), QStringLiteral("lazy"));
  deviceKind_->addItem(QStringLiteral("cpu"), QStringLiteral("cpu"));
  deviceCount_->setRange(1, 64);
  fallbacks_->setPlaceholderText(tr("ops to run on the host, e.g. softmax, gelu"));
  name_->setPlaceholderText(tr("the script's file name"));
  tags_->setPlaceholderText(tr("comma-separated, e.g. baseline, bs64"));
  command_->setObjectName(QStringLiteral("runCommandPreview"));
  command_->setWordWrap(true);
  command_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  command_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  problem_->setWordWrap(true);
  problem_->setForegroundRole(QPalette::PlaceholderText);

  auto *browse = new QToolButton(this);
  browse->setText(tr("Browse…"));
  connect(browse, &QToolButton::clicked, this, &RunScriptDialog::browse);
  auto *scriptRow = new QHBoxLayout;
  scriptRow->addWidget(script_, 1);
  scriptRow->addWidget(browse);
  auto *deviceRow = new QHBoxLayout;
  deviceRow->addWidget(deviceKind_);
  deviceRow->addWidget(new QLabel(tr("count"), this));
  deviceRow->addWidget(deviceCount_);
  deviceRow->addStretch(1);

  auto *form = new QFormLayout;
  // A row that is a layout gets no buddy from addRow(): the mnemonic needs one.
  const auto label = [this](const QString &text, QWidget *buddy) {
    auto *l = new QLabel(text, this);
    l->setBuddy(buddy);
    return l;
  };
  form->addRow(label(tr("&Script:"), script_), scriptRow);
  form->addRow(tr("&Arguments:"), args_);
  form->addRow(label(tr("&Devices:"), deviceKind_), deviceRow);
  form->addRow(QString(), bf16_);
  form->addRow(tr("Forced &fallbacks:"), fallbacks_);
  form->addRow(tr("Run &name:"), name_);
  form->addRow(tr("&Tags:"), tags_);

  QPushButton *run = buttons_->addButton(tr("&Run"), QDialogButtonBox::AcceptRole);
  run->setObjectName(QStringLiteral("runButton"));
  run->setDefault(true);
  connect(buttons_, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);

  auto *layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(new QLabel(tr("Command:"), this));
  layout->addWidget(command_);
  layout->addWidget(problem_);
  layout->addWidget(buttons_);
  setMinimumWidth(520);

  for (QLineEdit *edit : {script_, args_, fallbacks_, name_, tags_}) {
    connect(edit, &QLineEdit::textChanged, this, &RunScriptDialog::update);
  }
  connect(deviceKind_, &QComboBox::currentIndexChanged, this, &RunScriptDialog::update);
  connect(deviceCount_, &QSpinBox::valueChanged, this, &RunScriptDialog::update);
  connect(bf16_, &QCheckBox::toggled, this, &RunScriptDialog::update);
  update();
  askRunnerForFlags();
}

void RunScriptDialog::askRunnerForFlags() {
  // The runner's options grow; ask the installed one which it has, without
  // blocking the dialog.
  auto *help = new QProcess(this);
  connect(help, &QProcess::finished, this, [this, help] {
    const QString text = QString::fromUtf8(help->readAllStandardOutput() + help->readAllStandardError());
    QStringList flags;
    const QRegularExpression flag(QStringLiteral("--[a-z][a-z0-9-]*"));
    for (auto it = flag.globalMatch(text); it.hasNext();) flags << it.next().captured();
    if (!flags.isEmpty()) setSupportedFlags(flags);
    help->deleteLater();
  });
  connect(help, &QProcess::errorOccurred, help, &QObject::deleteLater);
  help->start(runnerPath(), {QStringLiteral("run"), QStringLiteral("--help")});
}

void RunScriptDialog::setSupportedFlags(const QStringList &flags) {
  supported_ = flags;
  const auto enable = [&](QWidget *widget, const char *option) {
    const QString flag = QString::fromLatin1(runFlag(option));
    const bool known = flags.contains(flag);
    widget->setEnabled(known);
    widget->setToolTip(known ? QString() : tr("This lazyscope does not support %1 yet.").arg(flag));
  };
  enable(deviceKind_, "device");
  enable(deviceCount_, "devices");
  enable(bf16_, "bf16");
  enable(fallbacks_, "fallback");
  enable(name_, "name");
  enable(tags_, "tag");
  update();
}

ScriptRunOptions RunScriptDialog::options() const {
  ScriptRunOptions o;
  o.script = script_->text().trimmed();
  o.args = QProcess::splitCommand(args_->text());
  o.name = name_->text().trimmed();
  o.tags = splitList(tags_->text());
  o.deviceKind = deviceKind_->isEnabled() ? deviceKind_->currentData().toString() : QString();
  o.deviceCount = deviceCount_->value();
  o.bf16 = bf16_->isEnabled() && bf16_->isChecked();
  o.fallbackOps = fallbacks_->isEnabled() ? splitList(fallbacks_->text()) : QStringList();
  return o;
}

void RunScriptDialog::setOptions(const ScriptRunOptions &o) {
  script_->setText(o.script);
  args_->setText(o.args.join(QLatin1Char(' ')));
  name_->setText(o.name);
  tags_->setText(o.tags.join(QStringLiteral(", ")));
  deviceKind_->setCurrentIndex(std::max(0, deviceKind_->findData(o.deviceKind)));
  deviceCount_->setValue(o.deviceCount);
  bf16_->setChecked(o.bf16);
  fallbacks_->setText(o.fallbackOps.join(QStringLiteral(", ")));
}

QStringList RunScriptDialog::commandLine() const { return runCommandLine(options(), history_, supported_); }

void RunScriptDialog::browse() {
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Script to Run"), QFileInfo(script_->text()).absolutePath(), tr("Python scripts (*.py);;All files (*)"));
  if (!path.isEmpty()) script_->setText(path);
}

void RunScriptDialog::update() {
  QStringList shown{QFileInfo(runnerPath()).fileName()};
  for (const QString &arg : commandLine()) {
    shown << (arg.contains(QLatin1Char(' ')) ? QLatin1Char('"') + arg + QLatin1Char('"') : arg);
  }
  command_->setText(shown.join(QLatin1Char(' ')));
  QString problem;
  const QString script = script_->text().trimmed();
  if (script.isEmpty()) {
    problem = tr("Choose a Python script to run.");
  } else if (!QFileInfo(script).isFile()) {
    problem = tr("There is no file %1.").arg(script);
  } else if (history_.isEmpty()) {
    problem = tr("Open a history first: the run is recorded into it.");
  }
  problem_->setText(problem.isEmpty() ? tr("The run is recorded into %1 and "
                                           "appears in the run list at once.")
                                            .arg(history_)
                                      : problem);
  for (QAbstractButton *button : buttons_->buttons()) {
    if (buttons_->buttonRole(button) == QDialogButtonBox::AcceptRole) button->setEnabled(problem.isEmpty());
  }
}

}  // namespace lazyscope::gui
