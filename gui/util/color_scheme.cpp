#include "util/color_scheme.h"

#include <QApplication>
#include <QPalette>
#include <QSettings>
#include <QStyle>
#include <QStyleFactory>

namespace lazyscope::gui {

namespace {

const QString kSettingsKey = QStringLiteral("View/colorScheme");
ColorScheme current = ColorScheme::System;
QString systemStyle;  // the style before a forced scheme replaced it

QPalette darkPalette() {
  // Close to the dark palettes of Breeze and Adwaita: grey, not black, with
  // text contrast above 7:1 and a blue highlight.
  QPalette p;
  const QColor window(0x2b, 0x2d, 0x30);
  const QColor base(0x1e, 0x1f, 0x22);
  const QColor text(0xe6, 0xe6, 0xe6);
  const QColor disabled(0x80, 0x80, 0x80);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, QColor(0x26, 0x28, 0x2b));
  p.setColor(QPalette::ToolTipBase, QColor(0x3a, 0x3d, 0x41));
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, QColor(0xa0, 0xa0, 0xa0));
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, QColor(0x35, 0x37, 0x3b));
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, Qt::white);
  p.setColor(QPalette::Light, QColor(0x4a, 0x4d, 0x52));
  p.setColor(QPalette::Midlight, QColor(0x3e, 0x41, 0x45));
  p.setColor(QPalette::Mid, QColor(0x55, 0x58, 0x5d));
  p.setColor(QPalette::Dark, QColor(0x18, 0x19, 0x1b));
  p.setColor(QPalette::Shadow, Qt::black);
  p.setColor(QPalette::Highlight, QColor(0x35, 0x84, 0xe4));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Link, QColor(0x78, 0xae, 0xed));
  p.setColor(QPalette::LinkVisited, QColor(0xc0, 0x61, 0xcb));
  for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText}) {
    p.setColor(QPalette::Disabled, role, disabled);
  }
  return p;
}

}  // namespace

bool parseColorScheme(const QString& text, ColorScheme* scheme) {
  const QString name = text.trimmed().toLower();
  if (name == QLatin1String("system")) {
    *scheme = ColorScheme::System;
  } else if (name == QLatin1String("light")) {
    *scheme = ColorScheme::Light;
  } else if (name == QLatin1String("dark")) {
    *scheme = ColorScheme::Dark;
  } else {
    return false;
  }
  return true;
}

QString colorSchemeName(ColorScheme scheme) {
  switch (scheme) {
    case ColorScheme::Light: return QStringLiteral("light");
    case ColorScheme::Dark: return QStringLiteral("dark");
    default: return QStringLiteral("system");
  }
}

void applyColorScheme(ColorScheme scheme) {
  if (systemStyle.isEmpty()) systemStyle = QApplication::style()->name();
  current = scheme;
  if (scheme == ColorScheme::System) {
    QApplication::setStyle(QStyleFactory::create(systemStyle));
    QApplication::setPalette(QPalette());  // back to the platform theme's palette
    return;
  }
  // Fusion draws every control from the palette; native styles may not.
  QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
  QApplication::setPalette(scheme == ColorScheme::Dark ? darkPalette() : QApplication::style()->standardPalette());
}

ColorScheme currentColorScheme() { return current; }

ColorScheme savedColorScheme() {
  ColorScheme scheme = ColorScheme::System;
  parseColorScheme(QSettings().value(kSettingsKey).toString(), &scheme);
  return scheme;
}

void saveColorScheme(ColorScheme scheme) { QSettings().setValue(kSettingsKey, colorSchemeName(scheme)); }

}  // namespace lazyscope::gui
