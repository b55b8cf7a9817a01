// HistoryLoader: reads off the GUI thread, reports storage errors with their
// message, and drops results that a newer load superseded.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QThreadPool>
#include <QtTest>

#include "history_fixture.h"
#include "loaders/history_loader.h"

using lazyscope::gui::HistoryLoader;
using lazyscope::gui::testing::HistoryFixture;
using Runs = std::vector<lazyscope::pb::RunSummary>;

class TestHistoryLoader : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void loadsRunsInTheBackground();
  void reportsCorruptFile();
  void reportsMissingFile();
  void dropsSupersededResults();
  void cancelDropsResult();

 private:
  // Lets every background read finish and every continuation run.
  static void drain();

  QTemporaryDir dir_;
  std::unique_ptr<HistoryFixture> fixture_;
  QString garbage_;
};

void TestHistoryLoader::initTestCase() {
  QVERIFY(dir_.isValid());
  fixture_ = std::make_unique<HistoryFixture>(dir_.filePath(QStringLiteral("history.sqlite")));
  garbage_ = dir_.filePath(QStringLiteral("garbage.sqlite"));
  lazyscope::gui::testing::writeGarbageFile(garbage_);
}

void TestHistoryLoader::drain() {
  QThreadPool::globalInstance()->waitForDone();
  QCoreApplication::processEvents();
  QCoreApplication::processEvents();
}

void TestHistoryLoader::loadsRunsInTheBackground() {
  HistoryLoader loader;
  Runs runs;
  QString loadedPath;
  connect(&loader, &HistoryLoader::loaded, this, [&](const QString& path, const Runs& result) {
    loadedPath = path;
    runs = result;
  });
  QSignalSpy started(&loader, &HistoryLoader::started);
  QSignalSpy loaded(&loader, &HistoryLoader::loaded);
  QSignalSpy failed(&loader, &HistoryLoader::failed);

  loader.load(fixture_->path());
  QCOMPARE(started.count(), 1);
  // The result comes through the event loop, never synchronously.
  QVERIFY(loader.isLoading());
  QCOMPARE(loaded.count(), 0);

  QTRY_COMPARE(loaded.count(), 1);
  QVERIFY(!loader.isLoading());
  QCOMPARE(failed.count(), 0);
  QCOMPARE(loadedPath, fixture_->path());
  QCOMPARE(runs.size(), size_t{3});
}

void TestHistoryLoader::reportsCorruptFile() {
  HistoryLoader loader;
  QSignalSpy loaded(&loader, &HistoryLoader::loaded);
  QSignalSpy failed(&loader, &HistoryLoader::failed);
  loader.load(garbage_);
  QTRY_COMPARE(failed.count(), 1);
  QCOMPARE(loaded.count(), 0);
  QCOMPARE(failed.at(0).at(0).toString(), garbage_);
  const QString message = failed.at(0).at(1).toString();
  QVERIFY2(message.contains(QStringLiteral("garbage.sqlite")), qPrintable(message));
}

void TestHistoryLoader::reportsMissingFile() {
  HistoryLoader loader;
  QSignalSpy failed(&loader, &HistoryLoader::failed);
  const QString missing = dir_.filePath(QStringLiteral("missing.sqlite"));
  loader.load(missing);
  QTRY_COMPARE(failed.count(), 1);
  const QString message = failed.at(0).at(1).toString();
  QVERIFY2(message.contains(QStringLiteral("missing.sqlite")), qPrintable(message));
  // Reading must not have created the file.
  QVERIFY(!QFileInfo::exists(missing));
}

void TestHistoryLoader::dropsSupersededResults() {
  HistoryLoader loader;
  QSignalSpy loaded(&loader, &HistoryLoader::loaded);
  QSignalSpy failed(&loader, &HistoryLoader::failed);
  loader.load(garbage_);
  loader.load(fixture_->path());
  QTRY_COMPARE(loaded.count(), 1);
  drain();
  QCOMPARE(loaded.count(), 1);
  // The garbage file's error was superseded.
  QVERIFY2(failed.isEmpty(), failed.isEmpty() ? ""
                                              : qPrintable(failed.at(0).at(0).toString() + QStringLiteral(": ") +
                                                           failed.at(0).at(1).toString()));
  QCOMPARE(loaded.at(0).at(0).toString(), fixture_->path());
}

void TestHistoryLoader::cancelDropsResult() {
  HistoryLoader loader;
  QSignalSpy loaded(&loader, &HistoryLoader::loaded);
  QSignalSpy failed(&loader, &HistoryLoader::failed);
  loader.load(fixture_->path());
  loader.cancel();
  QVERIFY(!loader.isLoading());
  drain();
  QCOMPARE(loaded.count(), 0);
  QCOMPARE(failed.count(), 0);
}

QTEST_GUILESS_MAIN(TestHistoryLoader)
#include "tst_history_loader.moc"
