// The assets the application ships: the icon renders, and the desktop entry
// has the keys a launcher needs.
#include <QFile>
#include <QIcon>
#include <QImage>
#include <QtTest>

class TestResources : public QObject {
  Q_OBJECT

 private slots:
  void iconRenders();
  void desktopEntryIsComplete();
};

void TestResources::iconRenders() {
  const QIcon icon(QStringLiteral(":/lazyscope/icons/lazyscope.svg"));
  QVERIFY(!icon.isNull());
  const QImage image = icon.pixmap(64, 64).toImage();
  QCOMPARE(image.size(), QSize(64, 64));
  // Transparent corners (rounded tile), an opaque centre.
  QCOMPARE(qAlpha(image.pixel(0, 0)), 0);
  QCOMPARE(qAlpha(image.pixel(32, 32)), 255);
}

void TestResources::desktopEntryIsComplete() {
  QFile file(QStringLiteral(LAZYSCOPE_RESOURCES_DIR "/lazyscope-gui.desktop"));
  QVERIFY(file.open(QIODevice::ReadOnly | QIODevice::Text));
  const QStringList lines = QString::fromUtf8(file.readAll()).split(QLatin1Char('\n'));
  QCOMPARE(lines.value(0), QStringLiteral("[Desktop Entry]"));
  QHash<QString, QString> entry;
  for (const QString& line : lines.mid(1)) {
    if (line.isEmpty() || line.startsWith(QLatin1Char('#'))) continue;
    const qsizetype eq = line.indexOf(QLatin1Char('='));
    QVERIFY2(eq > 0, qPrintable(line));
    QVERIFY2(!entry.contains(line.left(eq)), qPrintable(line));
    entry.insert(line.left(eq), line.mid(eq + 1));
  }
  QCOMPARE(entry.value(QStringLiteral("Type")), QStringLiteral("Application"));
  QCOMPARE(entry.value(QStringLiteral("Name")), QStringLiteral("LazyScope"));
  QVERIFY(!entry.value(QStringLiteral("Comment")).isEmpty());
  QCOMPARE(entry.value(QStringLiteral("Exec")), QStringLiteral("lazyscope-gui %f"));
  QCOMPARE(entry.value(QStringLiteral("Icon")), QStringLiteral("lazyscope"));
  const QStringList categories = entry.value(QStringLiteral("Categories")).split(QLatin1Char(';'));
  QVERIFY(categories.contains(QStringLiteral("Development")));
  QVERIFY(categories.contains(QStringLiteral("Profiling")));
  QVERIFY(entry.value(QStringLiteral("Categories")).endsWith(QLatin1Char(';')));
}

QTEST_MAIN(TestResources)
#include "tst_resources.moc"
