// The views and modifiers of the SwiftUI stand-in (the protocols, result builders and
// data flow are in Core.swift). Bodies trap.
import Foundation
import UIKit

// MARK: Views

/// developer.apple.com/documentation/swiftui/text
public struct Text: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    /// `init<S>(_ content: S) where S : StringProtocol`
    public nonisolated init<S: StringProtocol>(_ content: S) {}
}

/// developer.apple.com/documentation/swiftui/image
public struct Image: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public nonisolated init(systemName: String) {}
    public nonisolated init(uiImage: UIImage) {}
    /// `func resizable(capInsets: EdgeInsets = EdgeInsets(), resizingMode: Image.ResizingMode = .stretch) -> Image`
    public func resizable() -> Image { self }
}

/// developer.apple.com/documentation/swiftui/label
public struct Label: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    /// `init<S>(_ title: S, systemImage name: String) where S : StringProtocol`
    public nonisolated init<S: StringProtocol>(_ title: S, systemImage name: String) {}
}

/// developer.apple.com/documentation/swiftui/buttonrole
public struct ButtonRole: Equatable, Sendable {
    public static let destructive = ButtonRole(), cancel = ButtonRole()
}

/// developer.apple.com/documentation/swiftui/button
public struct Button<Label: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    /// `init(action: @escaping () -> Void, @ViewBuilder label: () -> Label)`
    public init(action: @escaping () -> Void, @ViewBuilder label: () -> Label) {}
}
extension Button where Label == Text {
    /// `init<S>(_ title: S, action: @escaping () -> Void) where S : StringProtocol`
    public init<S: StringProtocol>(_ title: S, action: @escaping () -> Void) {}
    /// `init<S>(_ title: S, role: ButtonRole?, action: @escaping () -> Void) where S : StringProtocol`
    public init<S: StringProtocol>(_ title: S, role: ButtonRole?, action: @escaping () -> Void) {}
}

/// developer.apple.com/documentation/swiftui/toggle
public struct Toggle: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    /// `init<S>(_ title: S, isOn: Binding<Bool>) where S : StringProtocol`
    public init<S: StringProtocol>(_ title: S, isOn: Binding<Bool>) {}
}

/// developer.apple.com/documentation/swiftui/textfield
public struct TextField: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    /// `init<S>(_ title: S, text: Binding<String>) where S : StringProtocol`
    public init<S: StringProtocol>(_ title: S, text: Binding<String>) {}
}

/// developer.apple.com/documentation/swiftui/securefield
public struct SecureField: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init<S: StringProtocol>(_ title: S, text: Binding<String>) {}
}

/// developer.apple.com/documentation/swiftui/picker
public struct Picker<SelectionValue: Hashable, Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    /// `init<S>(_ title: S, selection: Binding<SelectionValue>, @ViewBuilder content: () -> Content) where S : StringProtocol`
    public init<S: StringProtocol>(_ title: S, selection: Binding<SelectionValue>, @ViewBuilder content: () -> Content) {}
}

/// developer.apple.com/documentation/swiftui/progressview
public struct ProgressView: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init<S: StringProtocol>(_ title: S) {}
}

/// developer.apple.com/documentation/swiftui/spacer
public struct Spacer: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public nonisolated init(minLength: CGFloat? = nil) {}
}

/// A container of one `@ViewBuilder` closure (List, Form, Group, NavigationStack, ZStack,
/// ScrollView share this shape in the stand-in).
public struct List<Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init(@ViewBuilder content: () -> Content) {}
}
public struct Form<Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init(@ViewBuilder content: () -> Content) {}
}
public struct Group<Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init(@ViewBuilder content: () -> Content) {}
}
public struct NavigationStack<Root: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init(@ViewBuilder root: () -> Root) {}
}
public struct ZStack<Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init(alignment: Alignment = .center, @ViewBuilder content: () -> Content) {}
}
public struct ScrollView<Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init(_ axes: Axis.Set = .vertical, showsIndicators: Bool = true, @ViewBuilder content: () -> Content) {}
}
/// developer.apple.com/documentation/swiftui/vstack — `init(alignment: HorizontalAlignment = .center, spacing: CGFloat? = nil, content:)`
public struct VStack<Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init(alignment: HorizontalAlignment = .center, spacing: CGFloat? = nil, @ViewBuilder content: () -> Content) {}
}
/// developer.apple.com/documentation/swiftui/hstack
public struct HStack<Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init(alignment: VerticalAlignment = .center, spacing: CGFloat? = nil, @ViewBuilder content: () -> Content) {}
}
/// developer.apple.com/documentation/swiftui/viewthatfits — `init(in axes: Axis.Set = [.horizontal, .vertical], content:)`
public struct ViewThatFits<Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init(in axes: Axis.Set = [.horizontal, .vertical], @ViewBuilder content: () -> Content) {}
}

/// developer.apple.com/documentation/swiftui/section (header and footer collapsed).
public struct Section<Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    /// `init(@ViewBuilder content: () -> Content)`
    public init(@ViewBuilder content: () -> Content) {}
    /// `init<S>(_ title: S, @ViewBuilder content: () -> Content) where S : StringProtocol`
    public init<S: StringProtocol>(_ title: S, @ViewBuilder content: () -> Content) {}
}

/// developer.apple.com/documentation/swiftui/foreach
public struct ForEach<Data: RandomAccessCollection, ID: Hashable, Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    /// `init(_ data: Data, id: KeyPath<Data.Element, ID>, @ViewBuilder content: @escaping (Data.Element) -> Content)`
    public init(_ data: Data, id: KeyPath<Data.Element, ID>, @ViewBuilder content: @escaping (Data.Element) -> Content) {}
}
extension ForEach where ID == Data.Element.ID, Data.Element: Identifiable {
    /// `init(_ data: Data, @ViewBuilder content: @escaping (Data.Element) -> Content)`
    public init(_ data: Data, @ViewBuilder content: @escaping (Data.Element) -> Content) {}
}

/// developer.apple.com/documentation/swiftui/navigationlink
public struct NavigationLink<Label: View, Destination: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    /// `init(@ViewBuilder destination: () -> Destination, @ViewBuilder label: () -> Label)`
    public init(@ViewBuilder destination: () -> Destination, @ViewBuilder label: () -> Label) {}
}
extension NavigationLink where Destination == Never {
    /// `init<P>(value: P?, @ViewBuilder label: () -> Label) where P : Hashable`
    public init<P: Hashable>(value: P?, @ViewBuilder label: () -> Label) {}
}

/// developer.apple.com/documentation/swiftui/uiviewrepresentable
@MainActor @preconcurrency public protocol UIViewRepresentable: View where Body == Never {
    associatedtype UIViewType: UIView
    typealias Context = UIViewRepresentableContext<Self>
    func makeUIView(context: Context) -> UIViewType
    func updateUIView(_ uiView: UIViewType, context: Context)
}
extension UIViewRepresentable {
    public var body: Never { fatalError("stand-in") }
}
public struct UIViewRepresentableContext<Representable: UIViewRepresentable> {}

// MARK: Modifier values

/// developer.apple.com/documentation/swiftui/accessibilitychildbehavior
public struct AccessibilityChildBehavior: Sendable {
    public static let ignore = AccessibilityChildBehavior(), contain = AccessibilityChildBehavior(), combine = AccessibilityChildBehavior()
}
public protocol PrimitiveButtonStyle {}
public struct BorderedProminentButtonStyle: PrimitiveButtonStyle {}
public struct BorderedButtonStyle: PrimitiveButtonStyle {}
public struct BorderlessButtonStyle: PrimitiveButtonStyle {}
extension PrimitiveButtonStyle where Self == BorderedProminentButtonStyle { public static var borderedProminent: Self { .init() } }
extension PrimitiveButtonStyle where Self == BorderedButtonStyle { public static var bordered: Self { .init() } }
extension PrimitiveButtonStyle where Self == BorderlessButtonStyle { public static var borderless: Self { .init() } }
/// developer.apple.com/documentation/swiftui/controlsize
public enum ControlSize: Sendable { case mini, small, regular, large, extraLarge }
/// developer.apple.com/documentation/swiftui/textinputautocapitalization
public struct TextInputAutocapitalization: Sendable {
    public static let never = TextInputAutocapitalization(), words = TextInputAutocapitalization(),
                      sentences = TextInputAutocapitalization(), characters = TextInputAutocapitalization()
}
public enum ContentMode: Sendable { case fit, fill }

// MARK: Modifiers (developer.apple.com/documentation/swiftui/view, "Instance Methods")

extension View {
    public func font(_ font: Font?) -> some View { _StubView() }
    public func padding(_ length: CGFloat? = nil) -> some View { _StubView() }
    public func padding(_ edges: Edge.Set = .all, _ length: CGFloat? = nil) -> some View { _StubView() }
    public func frame(width: CGFloat? = nil, height: CGFloat? = nil, alignment: Alignment = .center) -> some View { _StubView() }
    public func frame(minWidth: CGFloat? = nil, idealWidth: CGFloat? = nil, maxWidth: CGFloat? = nil, minHeight: CGFloat? = nil,
                      idealHeight: CGFloat? = nil, maxHeight: CGFloat? = nil, alignment: Alignment = .center) -> some View { _StubView() }
    /// `func background<S>(_ style: S, ignoresSafeAreaEdges edges: Edge.Set = .all) -> some View where S : ShapeStyle`
    public func background<S: ShapeStyle>(_ style: S, ignoresSafeAreaEdges edges: Edge.Set = .all) -> some View { _StubView() }
    /// `func background<S, T>(_ style: S, in shape: T, fillStyle: FillStyle = FillStyle()) -> some View where S : ShapeStyle, T : Shape`
    public func background<S: ShapeStyle, T: Shape>(_ style: S, in shape: T) -> some View { _StubView() }
    /// `func foregroundStyle<S>(_ style: S) -> some View where S : ShapeStyle`
    public func foregroundStyle<S: ShapeStyle>(_ style: S) -> some View { _StubView() }
    /// `func tint(_ tint: Color?) -> some View`
    public func tint(_ tint: Color?) -> some View { _StubView() }
    /// `func tint<S>(_ tint: S?) -> some View where S : ShapeStyle`
    public func tint<S: ShapeStyle>(_ tint: S?) -> some View { _StubView() }
    public func onTapGesture(count: Int = 1, perform action: @escaping () -> Void) -> some View { _StubView() }
    public func accessibilityLabel<S: StringProtocol>(_ label: S) -> some View { _StubView() }
    public func accessibilityHint<S: StringProtocol>(_ hint: S) -> some View { _StubView() }
    public func accessibilityElement(children: AccessibilityChildBehavior = .ignore) -> some View { _StubView() }
    public func ignoresSafeArea(_ regions: Int = 0, edges: Edge.Set = .all) -> some View { _StubView() }
    public func clipShape<S: Shape>(_ shape: S) -> some View { _StubView() }
    public func buttonStyle<S: PrimitiveButtonStyle>(_ style: S) -> some View { _StubView() }
    public func controlSize(_ controlSize: ControlSize) -> some View { _StubView() }
    public func disabled(_ disabled: Bool) -> some View { _StubView() }
    public func navigationTitle<S: StringProtocol>(_ title: S) -> some View { _StubView() }
    /// `func navigationDestination<D, C>(for data: D.Type, @ViewBuilder destination: @escaping (D) -> C) -> some View where D : Hashable, C : View`
    public func navigationDestination<D: Hashable, C: View>(for data: D.Type, @ViewBuilder destination: @escaping (D) -> C) -> some View { _StubView() }
    /// `func navigationDestination<D, C>(item: Binding<Optional<D>>, @ViewBuilder destination: @escaping (D) -> C) -> some View where D : Hashable, C : View`
    public func navigationDestination<D: Hashable, C: View>(item: Binding<D?>, @ViewBuilder destination: @escaping (D) -> C) -> some View { _StubView() }
    /// `func toolbar<Content>(@ViewBuilder content: () -> Content) -> some View where Content : View`
    public func toolbar<Content: View>(@ViewBuilder content: () -> Content) -> some View { _StubView() }
    /// `func refreshable(action: @escaping @Sendable () async -> Void) -> some View`
    public func refreshable(@_inheritActorContext action: @escaping @Sendable () async -> Void) -> some View { _StubView() }
    /// `func task(priority: TaskPriority = .userInitiated, _ action: @escaping @Sendable () async -> Void) -> some View`
    public func task(priority: TaskPriority = .userInitiated, @_inheritActorContext _ action: @escaping @Sendable () async -> Void) -> some View {
        _StubView()
    }
    /// `func task<T>(id value: T, priority: TaskPriority = .userInitiated, _ action: @escaping @Sendable () async -> Void) -> some View where T : Equatable`
    public func task<T: Equatable>(id value: T, priority: TaskPriority = .userInitiated,
                                   @_inheritActorContext _ action: @escaping @Sendable () async -> Void) -> some View { _StubView() }
    /// `func onChange<V>(of value: V, initial: Bool = false, _ action: @escaping (V, V) -> Void) -> some View where V : Equatable`
    public func onChange<V: Equatable>(of value: V, initial: Bool = false, _ action: @escaping (_ oldValue: V, _ newValue: V) -> Void) -> some View {
        _StubView()
    }
    public func onDisappear(perform action: (() -> Void)? = nil) -> some View { _StubView() }
    public func onAppear(perform action: (() -> Void)? = nil) -> some View { _StubView() }
    /// `func sheet<Content>(isPresented: Binding<Bool>, onDismiss: (() -> Void)? = nil, @ViewBuilder content: @escaping () -> Content) -> some View`
    public func sheet<Content: View>(isPresented: Binding<Bool>, onDismiss: (() -> Void)? = nil,
                                     @ViewBuilder content: @escaping () -> Content) -> some View { _StubView() }
    /// `func fullScreenCover<Item, Content>(item: Binding<Item?>, onDismiss: (() -> Void)? = nil,
    /// @ViewBuilder content: @escaping (Item) -> Content) -> some View where Item : Identifiable, Content : View`
    public func fullScreenCover<Item: Identifiable, Content: View>(item: Binding<Item?>, onDismiss: (() -> Void)? = nil,
                                                                   @ViewBuilder content: @escaping (Item) -> Content) -> some View { _StubView() }
    /// `func overlay<V>(alignment: Alignment = .center, @ViewBuilder content: () -> V) -> some View where V : View`
    public func overlay<V: View>(alignment: Alignment = .center, @ViewBuilder content: () -> V) -> some View { _StubView() }
    public func interactiveDismissDisabled(_ isDisabled: Bool = true) -> some View { _StubView() }
    public func textContentType(_ textContentType: UITextContentType?) -> some View { _StubView() }
    public func textInputAutocapitalization(_ autocapitalization: TextInputAutocapitalization?) -> some View { _StubView() }
    public func autocorrectionDisabled(_ disable: Bool = true) -> some View { _StubView() }
    public func keyboardType(_ type: UIKeyboardType) -> some View { _StubView() }
    public func tag<V: Hashable>(_ tag: V) -> some View { _StubView() }
    public func scaledToFit() -> some View { _StubView() }
    public func aspectRatio(_ aspectRatio: CGFloat? = nil, contentMode: ContentMode) -> some View { _StubView() }
}
